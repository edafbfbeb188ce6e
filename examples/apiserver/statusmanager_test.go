package apiserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/status"
)

// The status manager writes through StatusSink: an API pod's status, a
// static pod's status onto its mirror pod, and the deletion of a finished
// pod whose deletion was requested.
func TestStatusManagerThroughStatusSink(t *testing.T) {
	now := metav1.Now()
	deleting := apiPod("ns", "job", "uj", "n1")
	deleting.DeletionTimestamp = &now
	static := staticPod("kube-system", "etcd-n1", "h1", "n1")
	client := fake.NewClientset(apiPod("ns", "web", "uw", "n1"), deleting, mirrorPod("kube-system", "etcd-n1", "h1", "m1", "n1"))
	sink, err := apiserver.NewStatusSink(client, apiserver.StatusSinkOptions{Retry: fastRetry})
	require.NoError(t, err)
	m, err := status.New(status.Options{
		Sink:           sink,
		DeletionSafety: status.PodDeletionSafetyFunc(func(types.UID) bool { return false }),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() {
		cancel()
		assert.NoError(t, <-done)
	}()

	running := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}}
	require.NoError(t, m.Set(apiPod("ns", "web", "uw", "n1"), running))
	require.NoError(t, m.Set(static, running))
	require.NoError(t, m.Set(deleting, v1.PodStatus{Phase: v1.PodSucceeded}))
	m.TerminatePod(deleting) // its worker finished it: it may go

	phase := func(ns, name string) v1.PodPhase {
		p, err := client.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return p.Status.Phase
	}
	require.Eventually(t, func() bool { return phase("ns", "web") == v1.PodRunning }, waitFor, time.Millisecond)
	require.Eventually(t, func() bool { return phase("kube-system", "etcd-n1") == v1.PodRunning }, waitFor, time.Millisecond, "the mirror pod carries the static pod's status")
	require.Eventually(t, func() bool {
		_, err := client.CoreV1().Pods("ns").Get(t.Context(), "job", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, waitFor, time.Millisecond, "a finished pod being deleted is deleted")
}
