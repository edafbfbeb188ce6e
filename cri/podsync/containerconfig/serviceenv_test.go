package containerconfig_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

func svc(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

func TestServiceEnv(t *testing.T) {
	kubernetes := svc("default", "kubernetes", "10.96.0.1", v1.ServicePort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP})
	web := svc("shop", "web-front", "10.96.0.20",
		v1.ServicePort{Port: 80},
		v1.ServicePort{Name: "dns-udp", Port: 53, Protocol: v1.ProtocolUDP})
	headless := svc("shop", "db", v1.ClusterIPNone, v1.ServicePort{Port: 5432})
	other := svc("elsewhere", "api", "10.96.0.30", v1.ServicePort{Port: 8080})
	all := []*v1.Service{kubernetes, web, headless, other}

	k8sVars := map[string]string{
		"KUBERNETES_SERVICE_HOST":       "10.96.0.1",
		"KUBERNETES_SERVICE_PORT":       "443",
		"KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT":               "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP":       "tcp://10.96.0.1:443",
		"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
		"KUBERNETES_PORT_443_TCP_PORT":  "443",
		"KUBERNETES_PORT_443_TCP_ADDR":  "10.96.0.1",
	}
	webVars := map[string]string{
		"WEB_FRONT_SERVICE_HOST":         "10.96.0.20",
		"WEB_FRONT_SERVICE_PORT":         "80",
		"WEB_FRONT_SERVICE_PORT_DNS_UDP": "53",
		"WEB_FRONT_PORT":                 "tcp://10.96.0.20:80",
		"WEB_FRONT_PORT_80_TCP":          "tcp://10.96.0.20:80",
		"WEB_FRONT_PORT_80_TCP_PROTO":    "tcp",
		"WEB_FRONT_PORT_80_TCP_PORT":     "80",
		"WEB_FRONT_PORT_80_TCP_ADDR":     "10.96.0.20",
		"WEB_FRONT_PORT_53_UDP":          "udp://10.96.0.20:53",
		"WEB_FRONT_PORT_53_UDP_PROTO":    "udp",
		"WEB_FRONT_PORT_53_UDP_PORT":     "53",
		"WEB_FRONT_PORT_53_UDP_ADDR":     "10.96.0.20",
	}
	merged := map[string]string{}
	for _, m := range []map[string]string{k8sVars, webVars} {
		for k, v := range m {
			merged[k] = v
		}
	}
	tests := []struct {
		name  string
		ns    string
		links bool
		want  map[string]string
	}{
		{"the pod's namespace and the kubernetes service; not headless, not other namespaces", "shop", true, merged},
		{"without service links, the kubernetes service only", "shop", false, k8sVars},
		{"a namespace without services", "empty", true, k8sVars},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, containerconfig.ServiceEnv(all, tt.ns, tt.links))
		})
	}
	assert.Empty(t, containerconfig.ServiceEnv(nil, "shop", true))
}

func TestContainerEnvHasServiceVariables(t *testing.T) {
	services := []*v1.Service{svc("default", "kubernetes", "10.96.0.1", v1.ServicePort{Name: "https", Port: 443})}
	var listErr error
	s := newBuilder(t, containerconfig.Options{
		Services: containerconfig.ServiceListerFunc(func() ([]*v1.Service, error) { return services, listErr })})
	c := ctr("app")
	c.Env = []v1.EnvVar{
		{Name: "KUBERNETES_SERVICE_PORT", Value: "6443"},
		{Name: "URL", Value: "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"},
	}
	c.Command = []string{"echo", "$(KUBERNETES_PORT_443_TCP_ADDR)"}
	pod := newPod("", nil, c)
	cfg, err := s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "", nil)
	require.NoError(t, err)
	env := map[string]string{}
	for _, kv := range cfg.GetEnvs() {
		env[kv.GetKey()] = string(kv.GetValue())
	}
	assert.Equal(t, "10.96.0.1", env["KUBERNETES_SERVICE_HOST"])
	assert.Equal(t, "6443", env["KUBERNETES_SERVICE_PORT"], "the pod's own variable wins")
	assert.Equal(t, "https://10.96.0.1:6443", env["URL"])
	assert.Equal(t, []string{"echo", "10.96.0.1"}, cfg.GetCommand(), "command and args expand service variables too")

	// Until the services can be listed, a pod of the API server waits; a
	// static pod runs without them.
	listErr = errors.New("services have not yet been read at least once, cannot construct envvars")
	_, err = s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "", nil)
	require.ErrorContains(t, err, "services have not yet been read at least once")
	pod.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
	cfg, err = s.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, nil, "", nil)
	require.NoError(t, err)
	assert.Len(t, cfg.GetEnvs(), 2)
}
