package containerconfig_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/volume"
)

// testObjects holds a configMap default/cfg and a secret default/creds.
func testObjects() *volume.StaticSources {
	objs := &volume.StaticSources{}
	objs.SetConfigMap(&v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"},
		Data:       map[string]string{"MODE": "fast", "LEVEL": "3"},
	})
	objs.SetSecret(&v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "creds"},
		Data:       map[string][]byte{"USER": []byte("admin"), "PASS": []byte("s3cret")},
	})
	return objs
}

func cmKey(name, key string, optional bool) *v1.EnvVarSource {
	return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}
}

func secretKey(name, key string, optional bool) *v1.EnvVarSource {
	return &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: name}, Key: key, Optional: &optional}}
}

func TestEnvFromConfigMapsAndSecrets(t *testing.T) {
	yes := true
	tests := []struct {
		name    string
		envFrom []v1.EnvFromSource
		env     []v1.EnvVar
		noAPI   bool
		want    map[string]string
		wantErr string
	}{
		{
			name: "envFrom with prefix; env overrides and expands what envFrom set",
			envFrom: []v1.EnvFromSource{
				{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
				{Prefix: "DB_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}},
			},
			env:  []v1.EnvVar{{Name: "LEVEL", Value: "9"}, {Name: "WHO", Value: "$(DB_USER)@$(MODE)"}},
			want: map[string]string{"MODE": "fast", "LEVEL": "9", "DB_USER": "admin", "DB_PASS": "s3cret", "WHO": "admin@fast"},
		},
		{
			name: "key references",
			env:  []v1.EnvVar{{Name: "M", ValueFrom: cmKey("cfg", "MODE", false)}, {Name: "P", ValueFrom: secretKey("creds", "PASS", false)}},
			want: map[string]string{"M": "fast", "P": "s3cret"},
		},
		{
			name: "optional references to what is missing are left out",
			envFrom: []v1.EnvFromSource{
				{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Optional: &yes}},
				{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}, Optional: &yes}},
			},
			env: []v1.EnvVar{
				{Name: "A", ValueFrom: cmKey("nope", "MODE", true)},
				{Name: "B", ValueFrom: cmKey("cfg", "NOPE", true)},
				{Name: "C", ValueFrom: secretKey("nope", "PASS", true)},
				{Name: "D", ValueFrom: secretKey("creds", "NOPE", true)},
				{Name: "E", Value: "e"},
			},
			want: map[string]string{"E": "e"},
		},
		{
			name:    "missing configMap",
			env:     []v1.EnvVar{{Name: "A", ValueFrom: cmKey("nope", "MODE", false)}},
			wantErr: `configmap "nope" not found`,
		},
		{
			name:    "missing configMap key",
			env:     []v1.EnvVar{{Name: "A", ValueFrom: cmKey("cfg", "NOPE", false)}},
			wantErr: "couldn't find key NOPE in ConfigMap default/cfg",
		},
		{
			name:    "missing secret in envFrom",
			envFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "nope"}}}},
			wantErr: `secret "nope" not found`,
		},
		{
			name:    "missing secret key",
			env:     []v1.EnvVar{{Name: "A", ValueFrom: secretKey("creds", "NOPE", false)}},
			wantErr: "couldn't find key NOPE in Secret default/creds",
		},
		{
			name:    "no configMap source",
			env:     []v1.EnvVar{{Name: "A", ValueFrom: cmKey("cfg", "MODE", true)}},
			noAPI:   true,
			wantErr: "couldn't get configMap default/cfg, no kubeClient defined",
		},
		{
			name:    "no secret source",
			envFrom: []v1.EnvFromSource{{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}}},
			noAPI:   true,
			wantErr: "couldn't get secret default/creds, no kubeClient defined",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := containerconfig.Options{}
			if !tt.noAPI {
				objs := testObjects()
				opts.ConfigMaps, opts.Secrets = objs, objs
			}
			s := newBuilder(t, opts)
			c := ctr("app")
			c.EnvFrom, c.Env = tt.envFrom, tt.env
			c.Command = []string{"echo", "$(LEVEL)"}
			pod := newPod("", nil, c)
			cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "", nil)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			got := map[string]string{}
			for _, kv := range cfg.GetEnvs() {
				_, dup := got[kv.GetKey()]
				assert.False(t, dup, "variable %s set twice", kv.GetKey())
				got[kv.GetKey()] = string(kv.GetValue())
			}
			assert.Equal(t, tt.want, got)
			if level, ok := tt.want["LEVEL"]; ok {
				assert.Equal(t, []string{"echo", level}, cfg.GetCommand(), "command expands envFrom's variables too")
			}
		})
	}
}
