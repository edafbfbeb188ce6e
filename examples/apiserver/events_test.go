package apiserver_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

func TestNewRecorderWritesKubeletEvents(t *testing.T) {
	client := fake.NewClientset()
	rec, stop := apiserver.NewRecorder(client, "n1")
	defer stop()
	pod := apiPod("ns", "web", "u1", "n1")
	rec.Eventf(pod, v1.EventTypeNormal, "Pulled", "Successfully pulled image %q", "busybox")

	var events *v1.EventList
	require.Eventually(t, func() bool {
		var err error
		events, err = client.CoreV1().Events("ns").List(t.Context(), metav1.ListOptions{})
		return err == nil && len(events.Items) == 1
	}, waitFor, time.Millisecond, "the event reaches the API")
	e := events.Items[0]
	assert.Equal(t, "kubelet", e.Source.Component)
	assert.Equal(t, "n1", e.Source.Host)
	assert.Equal(t, "Pulled", e.Reason)
	assert.Equal(t, v1.EventTypeNormal, e.Type)
	assert.Equal(t, `Successfully pulled image "busybox"`, e.Message)
	assert.Equal(t, "Pod", e.InvolvedObject.Kind)
	assert.Equal(t, "web", e.InvolvedObject.Name)
	assert.Equal(t, pod.UID, e.InvolvedObject.UID)
}

// A GatedRecorder drops what comes before Start and after its stop, and
// writes what comes between.
func TestGatedRecorder(t *testing.T) {
	client := fake.NewClientset()
	var g apiserver.GatedRecorder
	pod := apiPod("ns", "web", "u1", "n1")
	reasons := func() []string {
		events, err := client.CoreV1().Events("ns").List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		var out []string
		for _, e := range events.Items {
			out = append(out, e.Reason)
		}
		return out
	}
	g.Eventf(pod, v1.EventTypeNormal, "Before", "dropped")
	stop := g.Start(client, "n1")
	g.Eventf(pod, v1.EventTypeNormal, "While", "written")
	require.Eventually(t, func() bool { return len(reasons()) == 1 }, waitFor, time.Millisecond, "the event reaches the API")
	stop()
	g.Eventf(pod, v1.EventTypeNormal, "After", "dropped")
	assert.Equal(t, []string{"While"}, reasons())
}
