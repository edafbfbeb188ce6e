package apiserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/status"
)

func newSink(t *testing.T, objs ...runtime.Object) (*apiserver.StatusSink, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	s, err := apiserver.NewStatusSink(client, apiserver.StatusSinkOptions{Retry: fastRetry})
	require.NoError(t, err)
	return s, client
}

func TestNewStatusSinkNeedsClient(t *testing.T) {
	_, err := apiserver.NewStatusSink(nil, apiserver.StatusSinkOptions{})
	assert.ErrorIs(t, err, apiserver.ErrInvalidArgument)
}

func TestStatusSinkGetPod(t *testing.T) {
	tests := []struct {
		name     string
		stored   []runtime.Object
		pod      *v1.Pod
		wantUID  types.UID
		notFound bool
	}{
		{name: "same pod", stored: []runtime.Object{apiPod("ns", "web", "u1", "n1")}, pod: apiPod("ns", "web", "u1", "n1"), wantUID: "u1"},
		{name: "absent", pod: apiPod("ns", "web", "u1", "n1"), notFound: true},
		{name: "re-created under the same name", stored: []runtime.Object{apiPod("ns", "web", "u2", "n1")}, pod: apiPod("ns", "web", "u1", "n1"), notFound: true},
		{name: "static pod finds its mirror pod", stored: []runtime.Object{mirrorPod("kube-system", "etcd-n1", "h1", "m1", "n1")}, pod: staticPod("kube-system", "etcd-n1", "h1", "n1"), wantUID: "m1"},
		{name: "static pod with an outdated mirror pod", stored: []runtime.Object{mirrorPod("kube-system", "etcd-n1", "h0", "m1", "n1")}, pod: staticPod("kube-system", "etcd-n1", "h1", "n1"), notFound: true},
		{name: "static pod and an API pod of its name", stored: []runtime.Object{apiPod("kube-system", "etcd-n1", "h1", "n1")}, pod: staticPod("kube-system", "etcd-n1", "h1", "n1"), notFound: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newSink(t, tt.stored...)
			got, err := s.GetPod(t.Context(), tt.pod)
			if tt.notFound {
				require.ErrorIs(t, err, status.ErrPodNotFound)
				assert.Nil(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantUID, got.UID)
		})
	}
}

func TestStatusSinkUpdatePodStatusPatchesWhatChanged(t *testing.T) {
	stored := apiPod("ns", "web", "u1", "n1")
	stored.Status = v1.PodStatus{
		Phase:  v1.PodPending,
		HostIP: "10.0.0.1",
		Conditions: []v1.PodCondition{
			{Type: v1.PodScheduled, Status: v1.ConditionTrue},
			{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "ContainersNotReady"},
		},
	}
	s, client := newSink(t, stored)
	pod, err := s.GetPod(t.Context(), apiPod("ns", "web", "u1", "n1"))
	require.NoError(t, err)

	next := *pod.Status.DeepCopy()
	next.Phase = v1.PodRunning
	next.Conditions[1] = v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}
	next.ContainerStatuses = []v1.ContainerStatus{{Name: "c", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
	got, err := s.UpdatePodStatus(t.Context(), pod, next)
	require.NoError(t, err)
	assert.Equal(t, v1.PodRunning, got.Status.Phase)

	stored2, err := client.CoreV1().Pods("ns").Get(t.Context(), "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, next, stored2.Status, "the stored status is the new one")

	var patch k8stesting.PatchAction
	for _, a := range client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			patch = p
		}
	}
	require.NotNil(t, patch)
	assert.Equal(t, "status", patch.GetSubresource())
	assert.Equal(t, types.StrategicMergePatchType, patch.GetPatchType())
	var body map[string]any
	require.NoError(t, json.Unmarshal(patch.GetPatch(), &body))
	assert.Equal(t, map[string]any{"uid": "u1"}, body["metadata"], "the UID rides in the patch as a precondition")
	st := body["status"].(map[string]any)
	assert.Equal(t, "Running", st["phase"])
	assert.NotContains(t, st, "hostIP", "an unchanged field is not in the patch")
}

func TestPodStatusPatch(t *testing.T) {
	old := v1.PodStatus{Phase: v1.PodPending, HostIP: "10.0.0.1", Message: "m"}
	tests := []struct {
		name string
		next v1.PodStatus
		want string
	}{
		{name: "unchanged: only the UID", next: old, want: `{"metadata":{"uid":"u1"}}`},
		{name: "phase changed", next: v1.PodStatus{Phase: v1.PodRunning, HostIP: "10.0.0.1", Message: "m"}, want: `{"metadata":{"uid":"u1"},"status":{"phase":"Running"}}`},
		{name: "field cleared", next: v1.PodStatus{Phase: v1.PodPending, HostIP: "10.0.0.1"}, want: `{"metadata":{"uid":"u1"},"status":{"message":null}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := apiserver.PodStatusPatch("u1", old, tt.next)
			require.NoError(t, err)
			assert.JSONEq(t, tt.want, string(got))
		})
	}
}

func TestStatusSinkRetries(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web", errors.New("changed"))
	tests := []struct {
		name      string
		errs      []error // returned by the first patches, then the tracker answers
		wantCalls int
		wantErr   func(error) bool
	}{
		{name: "success at once", wantCalls: 1},
		{name: "two conflicts then success", errs: []error{conflict, conflict}, wantCalls: 3},
		{name: "server timeout then success", errs: []error{apierrors.NewServerTimeout(schema.GroupResource{Resource: "pods"}, "patch", 1)}, wantCalls: 2},
		{name: "connection error then success", errs: []error{errors.New("connection refused")}, wantCalls: 2},
		{name: "forbidden is not retried", errs: []error{apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web", errors.New("no"))}, wantCalls: 1, wantErr: apierrors.IsForbidden},
		{name: "attempts are bounded", errs: []error{conflict, conflict, conflict, conflict, conflict}, wantCalls: 4, wantErr: apierrors.IsConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, client := newSink(t, apiPod("ns", "web", "u1", "n1"))
			calls := 0
			client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
				calls++
				if calls <= len(tt.errs) {
					return true, nil, tt.errs[calls-1]
				}
				return false, nil, nil
			})
			pod := apiPod("ns", "web", "u1", "n1")
			_, err := s.UpdatePodStatus(t.Context(), pod, v1.PodStatus{Phase: v1.PodRunning})
			assert.Equal(t, tt.wantCalls, calls)
			if tt.wantErr != nil {
				require.Error(t, err)
				assert.True(t, tt.wantErr(err), "%v", err)
				return
			}
			require.NoError(t, err)
		})
	}
}

func TestStatusSinkRetryStopsWithContext(t *testing.T) {
	client := fake.NewClientset(apiPod("ns", "web", "u1", "n1"))
	s, err := apiserver.NewStatusSink(client, apiserver.StatusSinkOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		cancel() // the wait before the retry (100ms by default) ends with ctx
		return true, nil, apierrors.NewTooManyRequests("slow down", 1)
	})
	_, err = s.UpdatePodStatus(ctx, apiPod("ns", "web", "u1", "n1"), v1.PodStatus{Phase: v1.PodRunning})
	require.ErrorIs(t, err, context.Canceled)
	assert.True(t, apierrors.IsTooManyRequests(err))
}

func TestStatusSinkUpdateOfAGonePod(t *testing.T) {
	s, _ := newSink(t)
	_, err := s.UpdatePodStatus(t.Context(), apiPod("ns", "web", "u1", "n1"), v1.PodStatus{Phase: v1.PodRunning})
	require.ErrorIs(t, err, status.ErrPodNotFound)
	assert.True(t, apierrors.IsNotFound(err))
}

func TestStatusSinkDeletePod(t *testing.T) {
	s, client := newSink(t, apiPod("ns", "web", "u1", "n1"))
	var opts metav1.DeleteOptions
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts = a.(k8stesting.DeleteAction).GetDeleteOptions()
		return false, nil, nil
	})
	require.NoError(t, s.DeletePod(t.Context(), apiPod("ns", "web", "u1", "n1")))
	require.NotNil(t, opts.GracePeriodSeconds)
	assert.Equal(t, int64(0), *opts.GracePeriodSeconds)
	require.NotNil(t, opts.Preconditions)
	require.NotNil(t, opts.Preconditions.UID)
	assert.Equal(t, types.UID("u1"), *opts.Preconditions.UID)
	_, err := client.CoreV1().Pods("ns").Get(t.Context(), "web", metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err))

	err = s.DeletePod(t.Context(), apiPod("ns", "web", "u1", "n1"))
	assert.ErrorIs(t, err, status.ErrPodNotFound)
}

func TestStatusSinkDeleteOfAReplacedPod(t *testing.T) {
	s, client := newSink(t, apiPod("ns", "web", "u2", "n1"))
	calls := 0
	// The fake ignores preconditions: answer as the API server does.
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		calls++
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "web", errors.New("Precondition failed: UID in precondition: u1, UID in object meta: u2"))
	})
	err := s.DeletePod(t.Context(), apiPod("ns", "web", "u1", "n1"))
	require.ErrorIs(t, err, status.ErrPodNotFound)
	assert.Equal(t, 1, calls, "a failed precondition is not retried")
	_, err = client.CoreV1().Pods("ns").Get(t.Context(), "web", metav1.GetOptions{})
	assert.NoError(t, err, "the new pod is still there")
}
