package credentialprovider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"
)

// errNotAsked is wrapped by provide's error when the plugin is not run for
// the pod by design: it requires a service account the pod lacks, or the
// service account lacks a required annotation.
var errNotAsked = errors.New("plugin not invoked")

// serviceAccount is what a run for a pod's service account adds: the
// token and annotations sent to the plugin, and key, the part of the cache
// key that is the service account's. The zero value: no service account.
type serviceAccount struct {
	token       string
	annotations map[string]string
	key         string
}

// serviceAccount gets, for a provider with tokenAttributes, the pod's
// service account, its annotations the provider names and a token for it
// bound to the pod, as upstream kubelet does; the zero value for a
// provider without tokenAttributes, or for a pod without a service account
// when the provider does not require one.
func (pl *plugin) serviceAccount(ctx context.Context, pod *v1.Pod) (serviceAccount, error) {
	ta := pl.cfg.TokenAttributes
	if ta == nil {
		return serviceAccount{}, nil
	}
	if pod == nil || pod.Spec.ServiceAccountName == "" {
		if *ta.RequireServiceAccount {
			return serviceAccount{}, fmt.Errorf("service account name is empty for pod %s: %w", podRef(pod), errNotAsked)
		}
		return serviceAccount{}, nil
	}
	ns, name := pod.Namespace, pod.Spec.ServiceAccountName
	got, err := pl.sa.ServiceAccount(ctx, ns, name)
	if err != nil {
		return serviceAccount{}, fmt.Errorf("get service account %s/%s: %w", ns, name, err)
	}
	annotations := make(map[string]string, len(ta.RequiredServiceAccountAnnotationKeys)+len(ta.OptionalServiceAccountAnnotationKeys))
	for _, k := range ta.RequiredServiceAccountAnnotationKeys {
		v, ok := got.Annotations[k]
		if !ok {
			return serviceAccount{}, fmt.Errorf("service account %s/%s: required annotation %s not found: %w", ns, name, k, errNotAsked)
		}
		annotations[k] = v
	}
	for _, k := range ta.OptionalServiceAccountAnnotationKeys {
		if v, ok := got.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	tr, err := pl.sa.CreateToken(ctx, ns, name, &authenticationv1.TokenRequest{
		ObjectMeta: metav1.ObjectMeta{UID: got.UID},
		Spec: authenticationv1.TokenRequestSpec{
			Audiences: []string{ta.ServiceAccountTokenAudience},
			// No expirationSeconds: the API server's default, as upstream.
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
		},
	})
	if err != nil {
		return serviceAccount{}, fmt.Errorf("service account token %s/%s: %w", ns, name, err)
	}
	if tr == nil || tr.Status.Token == "" {
		return serviceAccount{}, fmt.Errorf("service account token %s/%s: the API server gave an empty token", ns, name)
	}
	sa := serviceAccount{token: tr.Status.Token, annotations: annotations}
	sa.key = serviceAccountKey(ns, name, string(got.UID), annotations, ta.CacheType, sa.token)
	return sa, nil
}

// serviceAccountKey is the part of a cache key that is the service
// account's, as upstream's: its namespace, name, UID and the annotations
// sent; with the Token cache type, the token's hash too (pods of one
// service account then share nothing, a pod's pulls share while its token
// is the same). The pod is not part of it.
func serviceAccountKey(namespace, name, uid string, annotations map[string]string, cacheType kubeletconfigv1.ServiceAccountTokenCacheType, token string) string {
	parts := []string{namespace, name, uid, strconv.Itoa(len(annotations))}
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		parts = append(parts, k, annotations[k])
	}
	if cacheType == kubeletconfigv1.TokenServiceAccountTokenCacheType {
		parts = append(parts, "token", hashOf(token))
	}
	// Each part prefixed by its length: no two lists of parts give one key.
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(strconv.Itoa(len(p)))
		b.WriteByte(':')
		b.WriteString(p)
	}
	return b.String()
}

// hashOf is a token's SHA-256, never the token itself in a key; "" for "".
func hashOf(token string) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// checkTokenNotEchoed refuses an answer whose password is the service
// account token sent unless the cache type is Token, as upstream: only
// with it does a cached credential not outlive the token.
func (pl *plugin) checkTokenNotEchoed(resp *credentialproviderv1.CredentialProviderResponse, token string) error {
	if token == "" || pl.cfg.TokenAttributes.CacheType == kubeletconfigv1.TokenServiceAccountTokenCacheType {
		return nil
	}
	for _, a := range resp.Auth {
		if a.Password == token {
			return errors.New("credential provider plugin returned the service account token as the password, which is not allowed when service account cache type is not set to 'Token'")
		}
	}
	return nil
}

// podRef names a pod in logs and errors.
func podRef(pod *v1.Pod) string {
	if pod == nil {
		return "<none>"
	}
	return pod.Namespace + "/" + pod.Name
}
