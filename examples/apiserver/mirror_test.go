package apiserver_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/status/node"
)

func testNode(name string, uid types.UID) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid}}
}

func names(pods []*v1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, apiserver.PodFullName(p))
	}
	return out
}

func TestPlanMirrorPods(t *testing.T) {
	deleting := mirrorPod("ns", "b", "hb", "mb", "n1")
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	deletingStatic := staticPod("ns", "d", "hd", "n1")
	deletingStatic.DeletionTimestamp = &now
	deletingOrphan := mirrorPod("ns", "z", "hz", "mz", "n1")
	deletingOrphan.DeletionTimestamp = &now

	tests := []struct {
		name                   string
		static, mirrors        []*v1.Pod
		wantDelete, wantCreate []string
	}{
		{name: "nothing", wantDelete: []string{}, wantCreate: []string{}},
		{name: "missing mirror is created", static: []*v1.Pod{staticPod("ns", "b", "hb", "n1"), staticPod("ns", "a", "ha", "n1")}, wantDelete: []string{}, wantCreate: []string{"a_ns", "b_ns"}},
		{name: "current mirror is kept", static: []*v1.Pod{staticPod("ns", "a", "ha", "n1")}, mirrors: []*v1.Pod{mirrorPod("ns", "a", "ha", "ma", "n1")}, wantDelete: []string{}, wantCreate: []string{}},
		{name: "outdated mirror is recreated", static: []*v1.Pod{staticPod("ns", "a", "h2", "n1")}, mirrors: []*v1.Pod{mirrorPod("ns", "a", "h1", "ma", "n1")}, wantDelete: []string{"a_ns"}, wantCreate: []string{"a_ns"}},
		{name: "mirror being deleted is recreated", static: []*v1.Pod{staticPod("ns", "b", "hb", "n1")}, mirrors: []*v1.Pod{deleting}, wantDelete: []string{"b_ns"}, wantCreate: []string{"b_ns"}},
		{name: "orphaned mirror is deleted", mirrors: []*v1.Pod{mirrorPod("ns", "c", "hc", "mc", "n1")}, wantDelete: []string{"c_ns"}, wantCreate: []string{}},
		{name: "orphan already being deleted is left", mirrors: []*v1.Pod{deletingOrphan}, wantDelete: []string{}, wantCreate: []string{}},
		{name: "static pod being deleted gets no mirror", static: []*v1.Pod{deletingStatic}, wantDelete: []string{}, wantCreate: []string{}},
		{name: "an API pod is not a mirror pod", static: []*v1.Pod{staticPod("ns", "a", "ha", "n1")}, mirrors: []*v1.Pod{apiPod("ns", "x", "ux", "n1")}, wantDelete: []string{}, wantCreate: []string{"a_ns"}},
		{name: "same name in another namespace", static: []*v1.Pod{staticPod("ns1", "a", "ha", "n1")}, mirrors: []*v1.Pod{mirrorPod("ns2", "a", "ha", "ma", "n1")}, wantDelete: []string{"a_ns2"}, wantCreate: []string{"a_ns1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := apiserver.PlanMirrorPods(tt.static, tt.mirrors)
			assert.Equal(t, tt.wantDelete, names(plan.Delete))
			assert.Equal(t, tt.wantCreate, names(plan.Create))
		})
	}
}

func TestMirrorPodFor(t *testing.T) {
	s := staticPod("kube-system", "etcd-n1", "h1", "n1")
	s.Labels = map[string]string{"component": "etcd"}
	s.ResourceVersion = "7"
	s.Status.Phase = v1.PodRunning
	m := apiserver.MirrorPodFor(s, "n1", "node-uid")
	assert.Equal(t, "kube-system", m.Namespace)
	assert.Equal(t, "etcd-n1", m.Name)
	assert.Equal(t, s.Labels, m.Labels)
	assert.Equal(t, s.Spec, m.Spec)
	assert.Empty(t, m.UID)
	assert.Empty(t, m.ResourceVersion)
	assert.Equal(t, v1.PodStatus{}, m.Status)
	assert.Equal(t, "h1", m.Annotations[podspec.ConfigMirrorAnnotation])
	assert.Equal(t, "file", m.Annotations[podspec.ConfigSourceAnnotation])
	require.Len(t, m.OwnerReferences, 1)
	ref := m.OwnerReferences[0]
	assert.Equal(t, "v1", ref.APIVersion)
	assert.Equal(t, "Node", ref.Kind)
	assert.Equal(t, "n1", ref.Name)
	assert.Equal(t, types.UID("node-uid"), ref.UID)
	require.NotNil(t, ref.Controller)
	assert.True(t, *ref.Controller)
	_, ok := s.Annotations[podspec.ConfigMirrorAnnotation]
	assert.False(t, ok, "the static pod is not modified")
}

func TestCreateMirrorPod(t *testing.T) {
	tests := []struct {
		name    string
		stored  []runtime.Object
		wantErr func(error) bool
	}{
		{name: "created", stored: []runtime.Object{testNode("n1", "nu")}},
		{name: "same mirror already there", stored: []runtime.Object{testNode("n1", "nu"), mirrorPod("ns", "a", "ha", "ma", "n1")}},
		{name: "outdated mirror there", stored: []runtime.Object{testNode("n1", "nu"), mirrorPod("ns", "a", "h0", "ma", "n1")}, wantErr: apierrors.IsAlreadyExists},
		{name: "no node", wantErr: func(err error) bool { return apierrors.IsNotFound(err) && errors.Is(err, node.ErrNodeNotFound) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := fake.NewClientset(tt.stored...)
			m, err := apiserver.NewMirrorPods(client, "n1", apiserver.MirrorPodsOptions{})
			require.NoError(t, err)
			err = m.CreateMirrorPod(t.Context(), staticPod("ns", "a", "ha", "n1"))
			if tt.wantErr != nil {
				require.Error(t, err)
				assert.True(t, tt.wantErr(err), "%v", err)
				return
			}
			require.NoError(t, err)
			got, err := client.CoreV1().Pods("ns").Get(t.Context(), "a", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, "ha", got.Annotations[podspec.ConfigMirrorAnnotation])
		})
	}
}

func TestDeleteMirrorPod(t *testing.T) {
	client := fake.NewClientset(mirrorPod("ns", "a", "ha", "ma", "n1"))
	var opts metav1.DeleteOptions
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		opts = a.(k8stesting.DeleteAction).GetDeleteOptions()
		return false, nil, nil
	})
	m, err := apiserver.NewMirrorPods(client, "n1", apiserver.MirrorPodsOptions{})
	require.NoError(t, err)
	uid := types.UID("ma")
	deleted, err := m.DeleteMirrorPod(t.Context(), "a_ns", &uid)
	require.NoError(t, err)
	assert.True(t, deleted)
	assert.Equal(t, int64(0), *opts.GracePeriodSeconds)
	assert.Equal(t, uid, *opts.Preconditions.UID)

	deleted, err = m.DeleteMirrorPod(t.Context(), "a_ns", nil)
	require.NoError(t, err, "a pod already gone is not an error")
	assert.False(t, deleted)
	assert.Nil(t, opts.Preconditions, "no UID, no precondition")

	_, err = m.DeleteMirrorPod(t.Context(), "no-namespace", nil)
	assert.ErrorIs(t, err, apiserver.ErrInvalidArgument)
}

func TestParsePodFullName(t *testing.T) {
	tests := []struct {
		in       string
		name, ns string
		ok       bool
	}{
		{in: "web_default", name: "web", ns: "default", ok: true},
		{in: "a_b_c", name: "a_b", ns: "c", ok: true},
		{in: "web"},
		{in: "_default"},
		{in: "web_"},
		{in: ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			name, ns, ok := apiserver.ParsePodFullName(tt.in)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.name, name)
			assert.Equal(t, tt.ns, ns)
		})
	}
}

// Before the Node is registered Sync creates nothing, and says no error:
// the next Sync creates the mirror pods.
func TestMirrorPodsSyncBeforeTheNodeIsRegistered(t *testing.T) {
	client := fake.NewClientset()
	m, err := apiserver.NewMirrorPods(client, "n1", apiserver.MirrorPodsOptions{})
	require.NoError(t, err)
	static := []*v1.Pod{staticPod("ns", "a", "ha", "n1"), staticPod("ns", "b", "hb", "n1")}
	plan, err := m.Sync(t.Context(), static, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"a_ns", "b_ns"}, names(plan.Create))
	assert.Equal(t, 0, count(client.Actions(), "create", "pods", ""))
	assert.Equal(t, 1, count(client.Actions(), "get", "nodes", ""), "the Node read once")

	_, err = client.CoreV1().Nodes().Create(t.Context(), testNode("n1", "nu"), metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = m.Sync(t.Context(), static, nil)
	require.NoError(t, err)
	assert.Equal(t, 2, count(client.Actions(), "create", "pods", ""))
}

func TestMirrorPodsSync(t *testing.T) {
	client := fake.NewClientset(
		testNode("n1", "nu"),
		mirrorPod("ns", "outdated", "h0", "m-out", "n1"),
		mirrorPod("ns", "orphan", "ho", "m-orph", "n1"),
		mirrorPod("ns", "current", "hc", "m-cur", "n1"),
		mirrorPod("ns", "bad", "hb0", "m-bad", "n1"),
	)
	m, err := apiserver.NewMirrorPods(client, "n1", apiserver.MirrorPodsOptions{})
	require.NoError(t, err)
	// Deleting "bad" fails: the failure is reported and the others go on.
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.DeleteAction).GetName() == "bad" {
			return true, nil, apierrors.NewInternalError(assert.AnError)
		}
		return false, nil, nil
	})
	list, err := client.CoreV1().Pods("ns").List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	var mirrors []*v1.Pod
	for i := range list.Items {
		mirrors = append(mirrors, &list.Items[i])
	}
	static := []*v1.Pod{
		staticPod("ns", "outdated", "h1", "n1"),
		staticPod("ns", "current", "hc", "n1"),
		staticPod("ns", "missing", "hm", "n1"),
		staticPod("ns", "bad", "hb1", "n1"),
	}
	plan, err := m.Sync(t.Context(), static, mirrors)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ns/bad")
	assert.Equal(t, []string{"bad_ns", "orphan_ns", "outdated_ns"}, names(plan.Delete))
	assert.Equal(t, []string{"bad_ns", "missing_ns", "outdated_ns"}, names(plan.Create))

	after, err := client.CoreV1().Pods("ns").List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	hashes := map[string]string{}
	for _, p := range after.Items {
		hashes[p.Name] = p.Annotations[podspec.ConfigMirrorAnnotation]
	}
	assert.Equal(t, map[string]string{"outdated": "h1", "current": "hc", "missing": "hm", "bad": "hb0"}, hashes)
}
