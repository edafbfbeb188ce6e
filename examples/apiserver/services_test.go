package apiserver_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

func service(ns, name, ip string, port int32) *v1.Service {
	return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1.ServiceSpec{ClusterIP: ip, Ports: []v1.ServicePort{{Port: port}}}}
}

func TestServices(t *testing.T) {
	client := fake.NewClientset(service("default", "kubernetes", "10.96.0.1", 443))
	s, err := apiserver.NewServices(client, apiserver.ServicesOptions{})
	require.NoError(t, err)
	_, err = s.ListServices()
	require.ErrorIs(t, err, apiserver.ErrServicesNotSynced, "nothing before the first list")

	runUntilEnd(t, s.Run)
	var names []string
	require.Eventually(t, func() bool {
		svcs, err := s.ListServices()
		names = names[:0]
		for _, svc := range svcs {
			names = append(names, svc.Namespace+"/"+svc.Name)
		}
		return err == nil && len(svcs) == 1
	}, waitFor, time.Millisecond)
	assert.Equal(t, []string{"default/kubernetes"}, names)

	// Services of every namespace are watched (the fake clientset's watch
	// sees only what happens after it started).
	require.Eventually(t, func() bool {
		for _, a := range client.Actions() {
			if w, ok := a.(k8stesting.WatchAction); ok && w.GetResource().Resource == "services" && w.GetNamespace() == "" {
				return true
			}
		}
		return false
	}, waitFor, time.Millisecond)
	_, err = client.CoreV1().Services("shop").Create(t.Context(), service("shop", "web", "10.96.0.9", 80), metav1.CreateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { svcs, _ := s.ListServices(); return len(svcs) == 2 }, waitFor, time.Millisecond)
	svcs, err := s.ListServices()
	require.NoError(t, err)
	env := containerconfig.ServiceEnv(svcs, "shop", true)
	assert.Equal(t, "10.96.0.1", env["KUBERNETES_SERVICE_HOST"])
	assert.Equal(t, "80", env["WEB_SERVICE_PORT"])

	_, err = apiserver.NewServices(nil, apiserver.ServicesOptions{})
	assert.ErrorIs(t, err, apiserver.ErrInvalidArgument)
}
