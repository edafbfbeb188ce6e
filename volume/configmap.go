package volume

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubeletkit/kubeletkit/volume/atomicwriter"
)

// configMapData merges a configMap's Data and BinaryData.
func configMapData(cm *v1.ConfigMap) map[string][]byte {
	out := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, s := range cm.Data {
		out[k] = []byte(s)
	}
	for k, b := range cm.BinaryData {
		out[k] = b
	}
	return out
}

// getConfigMap fetches a configMap; a missing optional one is (nil, nil).
func getConfigMap(ctx context.Context, src ConfigMapSource, namespace, name string, optional bool) (*v1.ConfigMap, error) {
	if src == nil {
		return nil, fmt.Errorf("configmap %q: %w (Options.Sources.ConfigMaps)", name, ErrNoSource)
	}
	cm, err := src.GetConfigMap(ctx, namespace, name)
	if apierrors.IsNotFound(err) && optional {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return cm, nil
}

// getSecret fetches a secret; a missing optional one is (nil, nil).
func getSecret(ctx context.Context, src SecretSource, namespace, name string, optional bool) (*v1.Secret, error) {
	if src == nil {
		return nil, fmt.Errorf("secret %q: %w (Options.Sources.Secrets)", name, ErrNoSource)
	}
	sec, err := src.GetSecret(ctx, namespace, name)
	if apierrors.IsNotFound(err) && optional {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return sec, nil
}

func configMapPayload(src ConfigMapSource) payloadFunc {
	return func(ctx context.Context, v *Volume) (map[string]atomicwriter.File, error) {
		s := v.Spec.ConfigMap
		optional := s.Optional != nil && *s.Optional
		cm, err := getConfigMap(ctx, src, v.Pod.Namespace, s.Name, optional)
		if err != nil {
			return nil, err
		}
		files := map[string]atomicwriter.File{}
		if cm == nil {
			return files, nil
		}
		if err := keyedPayload(files, "configmap", configMapData(cm), s.Items, defaultOr(s.DefaultMode), optional); err != nil {
			return nil, err
		}
		return files, nil
	}
}

func secretPayload(src SecretSource) payloadFunc {
	return func(ctx context.Context, v *Volume) (map[string]atomicwriter.File, error) {
		s := v.Spec.Secret
		optional := s.Optional != nil && *s.Optional
		sec, err := getSecret(ctx, src, v.Pod.Namespace, s.SecretName, optional)
		if err != nil {
			return nil, err
		}
		files := map[string]atomicwriter.File{}
		if sec == nil {
			return files, nil
		}
		if err := keyedPayload(files, "secret", secretData(sec), s.Items, defaultOr(s.DefaultMode), optional); err != nil {
			return nil, err
		}
		return files, nil
	}
}

// secretData merges a secret's Data and StringData (which the API server
// folds into Data; a secret read from a file may still carry it).
func secretData(sec *v1.Secret) map[string][]byte {
	if len(sec.StringData) == 0 {
		return sec.Data
	}
	out := make(map[string][]byte, len(sec.Data)+len(sec.StringData))
	for k, b := range sec.Data {
		out[k] = b
	}
	for k, s := range sec.StringData {
		out[k] = []byte(s)
	}
	return out
}
