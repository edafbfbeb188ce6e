package allocation_test

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/allocation"
)

var (
	someNode = allocation.NodeAllocatableFunc(func() (v1.ResourceList, error) { return resources("cpu", "4", "memory", "8Gi", "pods", "110"), nil })
	noPods   = allocation.PodsFuncs{}
)

func TestNewValidates(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts allocation.Options
		want error
	}{
		{name: "no node", opts: allocation.Options{Pods: noPods}, want: allocation.ErrMissingNode},
		{name: "no pods", opts: allocation.Options{Node: someNode}, want: allocation.ErrMissingPods},
		{name: "relative checkpoint", opts: allocation.Options{Node: someNode, Pods: noPods, CheckpointPath: "state"}, want: allocation.ErrInvalidOptions},
		{name: "no checkpoint", opts: allocation.Options{Node: someNode, Pods: noPods}},
		{name: "a checkpoint not there yet", opts: allocation.Options{Node: someNode, Pods: noPods, CheckpointPath: "/nonexistent/state"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := allocation.New(tc.opts)
			if tc.want != nil {
				assert.ErrorIs(t, err, tc.want)
				assert.Nil(t, m)
				return
			}
			require.NoError(t, err)
			assert.NotNil(t, m)
		})
	}
}

func TestLoad(t *testing.T) {
	for _, tc := range []struct {
		name    string
		content string // "" no file
		wantErr string
		want    string // web's cpu as allocated
	}{
		{name: "no file", want: "500m"},
		{name: "allocations", content: `{"version":1,"pods":{"uid-web":{"app":{"requests":{"cpu":"2","memory":"256Mi"}}}}}`, want: "2"},
		{name: "no pods", content: `{"version":1}`, want: "500m"},
		{name: "another version", content: `{"version":2,"pods":{}}`, wantErr: "version 2, want 1"},
		{name: "not JSON", content: `{`, wantErr: "unexpected end of JSON input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), allocation.CheckpointFile)
			if tc.content != "" {
				require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o600))
			}
			m, err := allocation.New(allocation.Options{Node: someNode, Pods: noPods, CheckpointPath: path})
			require.NoError(t, err)
			err = m.Load()
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			web := newPod(t, "web", map[string]string{"cpu": "500m", "memory": "256Mi"})
			got, _ := m.AllocatedPod(web)
			assert.Equal(t, tc.want, got.Spec.Containers[0].Resources.Requests.Cpu().String())
		})
	}
}

func TestAllocatedPodCopiesOnlyWhatDiffers(t *testing.T) {
	m, err := allocation.New(allocation.Options{Node: someNode, Pods: noPods})
	require.NoError(t, err)
	web := newPod(t, "web", map[string]string{"cpu": "500m", "memory": "256Mi"})

	got, asked := m.AllocatedPod(web)
	assert.Same(t, web, got, "a pod never allocated is its own view")
	assert.False(t, asked)

	m.SetAllocated(web)
	got, asked = m.AllocatedPod(web)
	assert.Same(t, web, got, "a pod as allocated is not copied")
	assert.False(t, asked)

	bigger := web.DeepCopy()
	resize(t, bigger, map[string]string{"cpu": "1"})
	want := bigger.DeepCopy()
	got, asked = m.AllocatedPod(bigger)
	assert.True(t, asked)
	assert.NotSame(t, bigger, got)
	assert.Equal(t, "500m", got.Spec.Containers[0].Resources.Requests.Cpu().String())
	assert.Equal(t, "500m", got.Spec.Containers[0].Resources.Limits.Cpu().String())
	assert.Equal(t, bigger.Generation, got.Generation, "only the resources differ")
	assert.Equal(t, want, bigger, "the shared pod is never written")
	got.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = want.Spec.Containers[0].Resources.Requests[v1.ResourceCPU]
	again, _ := m.AllocatedPod(bigger)
	assert.Equal(t, "500m", again.Spec.Containers[0].Resources.Requests.Cpu().String(), "the view's resources are the Manager's copy")
}

// The checkpoint is written by Flush only when an allocation changed, and
// at once when a pod with an allocation is forgotten.
func TestCheckpointWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", allocation.CheckpointFile)
	m, err := allocation.New(allocation.Options{Node: someNode, Pods: noPods, CheckpointPath: path})
	require.NoError(t, err)
	web := newPod(t, "web", map[string]string{"cpu": "500m", "memory": "256Mi"})
	written := func() bool {
		_, err := os.Stat(path)
		ok := err == nil
		_ = os.Remove(path)
		return ok
	}

	m.Flush()
	assert.False(t, written(), "nothing changed")
	m.SetAllocated(web)
	assert.False(t, written(), "SetAllocated waits for Flush")
	m.Flush()
	assert.True(t, written(), "the directory is made")
	m.SetAllocated(web)
	m.Flush()
	assert.False(t, written(), "the same allocation again changes nothing")
	m.RemovePod("uid-unknown")
	assert.False(t, written(), "a pod with no allocation")
	m.RemovePod(web.UID)
	assert.True(t, written())
	m.RemoveOrphanedPods(func(types.UID) bool { return false })
	assert.False(t, written(), "no pod left to forget")
}

// A checkpoint that cannot be written is logged, and the allocation held
// all the same.
func TestCheckpointWriteFailure(t *testing.T) {
	dir := t.TempDir()
	blocker := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(blocker, nil, 0o600))
	var logs bytes.Buffer
	m, err := allocation.New(allocation.Options{Node: someNode, Pods: noPods,
		CheckpointPath: filepath.Join(blocker, allocation.CheckpointFile), Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	web := newPod(t, "web", map[string]string{"cpu": "500m", "memory": "256Mi"})
	m.SetAllocated(web)
	m.Flush()
	assert.Contains(t, logs.String(), "Cannot write the allocation checkpoint")
	bigger := web.DeepCopy()
	resize(t, bigger, map[string]string{"cpu": "1"})
	_, asked := m.AllocatedPod(bigger)
	assert.True(t, asked)
}

// Without a recorder, a Manager decides all the same; a node that cannot
// be read defers.
func TestNoRecorderAndNodeError(t *testing.T) {
	m, err := allocation.New(allocation.Options{Pods: noPods,
		Node: allocation.NodeAllocatableFunc(func() (v1.ResourceList, error) { return nil, errors.New("down") })})
	require.NoError(t, err)
	web := newPod(t, "web", map[string]string{"cpu": "500m", "memory": "256Mi"})
	m.SetAllocated(web)
	bigger := web.DeepCopy()
	resize(t, bigger, map[string]string{"cpu": "1"})
	assert.True(t, m.HandleResize(bigger))
	c := m.Conditions(web.UID)
	require.Len(t, c, 1)
	assert.Equal(t, v1.PodResizePending, c[0].Type)
	assert.Equal(t, v1.PodReasonDeferred, c[0].Reason)
	assert.Equal(t, "Kubelet cannot get node info.", c[0].Message)
	assert.Empty(t, m.RetryPendingResizes(), "PodsFuncs without ByUID finds no pod: the deferred resize is dropped")
}

func TestPodsFuncs(t *testing.T) {
	var none allocation.PodsFuncs
	assert.Nil(t, none.OtherPods(&v1.Pod{}))
	_, ok := none.PodByUID("x")
	assert.False(t, ok)
	p := &v1.Pod{}
	f := allocation.PodsFuncs{Others: func(*v1.Pod) []*v1.Pod { return []*v1.Pod{p} }, ByUID: func(types.UID) (*v1.Pod, bool) { return p, true }}
	assert.Equal(t, []*v1.Pod{p}, f.OtherPods(&v1.Pod{}))
	got, ok := f.PodByUID("x")
	assert.True(t, ok)
	assert.Same(t, p, got)
}

// Under the static CPU manager a Guaranteed pod's CPU resize is Infeasible
// with upstream's message; its memory resize, and a Burstable pod's CPU
// resize, are weighed as usual.
func TestAdmitResizeUnderStaticCPUManager(t *testing.T) {
	m, err := allocation.New(allocation.Options{Node: someNode, Pods: noPods, CPUManagerStatic: true})
	require.NoError(t, err)
	g := newPod(t, "g", map[string]string{"cpu": "1", "memory": "256Mi"})
	b := newPod(t, "b", map[string]string{"cpu": "1", "memory": "256Mi", "burstable": ""})
	m.SetAllocated(g)
	m.SetAllocated(b)

	cpu := g.DeepCopy()
	resize(t, cpu, map[string]string{"cpu": "2"})
	assert.Equal(t, allocation.Decision{Outcome: allocation.Infeasible, Message: `Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"`}, m.AdmitResize(cpu))

	mem := g.DeepCopy()
	resize(t, mem, map[string]string{"memory": "512Mi"})
	assert.Equal(t, allocation.Admit, m.AdmitResize(mem).Outcome)

	bcpu := b.DeepCopy()
	resize(t, bcpu, map[string]string{"cpu": "2"})
	assert.Equal(t, allocation.Admit, m.AdmitResize(bcpu).Outcome)

	// Without the static policy the same resize is admitted.
	plain, err := allocation.New(allocation.Options{Node: someNode, Pods: noPods})
	require.NoError(t, err)
	plain.SetAllocated(g)
	assert.Equal(t, allocation.Admit, plain.AdmitResize(cpu).Outcome)
}

// Under the Static memory manager a Guaranteed pod's memory resize is
// Infeasible; its CPU resize is weighed as usual (no static CPU policy).
func TestAdmitResizeUnderStaticMemoryManager(t *testing.T) {
	m, err := allocation.New(allocation.Options{Node: someNode, Pods: noPods, MemoryManagerStatic: true})
	require.NoError(t, err)
	g := newPod(t, "g", map[string]string{"cpu": "1", "memory": "256Mi"})
	m.SetAllocated(g)
	mem := g.DeepCopy()
	resize(t, mem, map[string]string{"memory": "512Mi"})
	assert.Equal(t, allocation.Decision{Outcome: allocation.Infeasible, Message: `Resize is infeasible for Guaranteed Pods alongside Memory Manager policy "Static"`}, m.AdmitResize(mem))
	cpu := g.DeepCopy()
	resize(t, cpu, map[string]string{"cpu": "2"})
	assert.Equal(t, allocation.Admit, m.AdmitResize(cpu).Outcome)
}

// With InPlacePodLevelResourcesVerticalScaling off, a resize of the pod's
// own resources (spec.resources) is Infeasible with upstream's message; a
// resize of a container alone is weighed as usual, and with the gate on
// (the default) the pod-level resize is admitted.
func TestAdmitResizeWithPodLevelResizeDisabled(t *testing.T) {
	g := newPod(t, "g", map[string]string{"cpu": "1", "memory": "256Mi"})
	g.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}
	podLevel := g.DeepCopy()
	podLevel.Spec.Resources.Limits[v1.ResourceCPU] = resource.MustParse("3")
	container := g.DeepCopy()
	resize(t, container, map[string]string{"memory": "512Mi"})

	off, err := allocation.New(allocation.Options{Node: someNode, Pods: noPods, PodLevelResizeDisabled: true})
	require.NoError(t, err)
	off.SetAllocated(g)
	assert.Equal(t, allocation.Decision{Outcome: allocation.Infeasible, Message: "InPlacePodLevelResourcesVerticalScaling is disabled"}, off.AdmitResize(podLevel))
	assert.Equal(t, allocation.Admit, off.AdmitResize(container).Outcome)

	on, err := allocation.New(allocation.Options{Node: someNode, Pods: noPods})
	require.NoError(t, err)
	on.SetAllocated(g)
	assert.Equal(t, allocation.Admit, on.AdmitResize(podLevel).Outcome)
}
