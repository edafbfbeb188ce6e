package podsync_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cgroups"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

// sized is a container with CPU and memory requests and limits ("" leaves
// one out).
func sized(name, cpuReq, cpuLim, memLim string) v1.Container {
	c := ctr(name)
	c.Resources = v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
	if cpuReq != "" {
		c.Resources.Requests[v1.ResourceCPU] = resource.MustParse(cpuReq)
	}
	if cpuLim != "" {
		c.Resources.Limits[v1.ResourceCPU] = resource.MustParse(cpuLim)
	}
	if memLim != "" {
		c.Resources.Limits[v1.ResourceMemory] = resource.MustParse(memLim)
		c.Resources.Requests[v1.ResourceMemory] = resource.MustParse(memLim)
	}
	return c
}

// withResources is a running container's status reporting the resources
// spec container c would be created with.
func withResources(st *runtimeapi.ContainerStatus, c v1.Container) *runtimeapi.ContainerStatus {
	st.Resources = &runtimeapi.ContainerResources{Linux: containerconfig.Resources(&v1.Pod{}, &c)}
	return st
}

func TestComputeActionsResize(t *testing.T) {
	restartMemory := []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	cases := []struct {
		name string
		// was is what the container runs with, now its spec.
		was, now v1.Container
		static   bool
		noReport bool
		// update: resized in place; restart: killed and started.
		update, restart bool
	}{
		{name: "unchanged", was: sized("app", "100m", "200m", "64Mi"), now: sized("app", "100m", "200m", "64Mi")},
		{name: "cpu limit up", was: sized("app", "100m", "200m", "64Mi"), now: sized("app", "100m", "400m", "64Mi"), update: true},
		{name: "cpu request down", was: sized("app", "500m", "", ""), now: sized("app", "250m", "", ""), update: true},
		{name: "memory limit up", was: sized("app", "", "", "64Mi"), now: sized("app", "", "", "128Mi"), update: true},
		{name: "below the smallest shares is no change", was: sized("app", "1m", "", ""), now: sized("app", "2m", "", "")},
		{name: "below the smallest quota is no change", was: sized("app", "1m", "5m", ""), now: sized("app", "1m", "8m", "")},
		{
			name: "memory with RestartContainer restarts", restart: true,
			was: func() v1.Container { c := sized("app", "", "", "64Mi"); c.ResizePolicy = restartMemory; return c }(),
			now: func() v1.Container { c := sized("app", "", "", "128Mi"); c.ResizePolicy = restartMemory; return c }(),
		},
		{
			name: "cpu alone with RestartContainer for memory is in place", update: true,
			was: func() v1.Container { c := sized("app", "100m", "", "64Mi"); c.ResizePolicy = restartMemory; return c }(),
			now: func() v1.Container { c := sized("app", "300m", "", "64Mi"); c.ResizePolicy = restartMemory; return c }(),
		},
		{name: "a static pod is never resized", static: true, was: sized("app", "100m", "", ""), now: sized("app", "300m", "", "")},
		{name: "a runtime reporting no resources leaves nothing to compare", noReport: true, was: sized("app", "100m", "", ""), now: sized("app", "300m", "", "")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := newPod(v1.RestartPolicyAlways, nil, tc.now)
			if tc.static {
				pod.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
			}
			st := cst("c1", tc.now, running, 0, 0)
			if !tc.noReport {
				withResources(st, tc.was)
			}
			a := podsync.ComputeActions(pod, status(ready(), st), podsync.Probes{})
			if tc.update {
				require.Len(t, a.ContainersToUpdate, 1)
				u := a.ContainersToUpdate[0]
				assert.Equal(t, "c1", u.ID)
				assert.Equal(t, "app", u.Name)
				assert.Equal(t, containerconfig.Resources(&v1.Pod{}, &tc.now).String(), u.Desired.String())
			} else {
				assert.Empty(t, a.ContainersToUpdate)
			}
			if tc.restart {
				require.Len(t, a.ContainersToKill, 1)
				assert.Equal(t, podsync.KillResizeRestart, a.ContainersToKill[0].Reason)
				assert.Equal(t, "Container app resize requires restart", a.ContainersToKill[0].Message)
				assert.Equal(t, []int{0}, a.ContainersToStart)
				assert.False(t, a.KillPod)
			} else {
				assert.Empty(t, a.ContainersToKill)
				assert.Empty(t, a.ContainersToStart)
			}
			assert.Equal(t, !tc.update && !tc.restart, a.Nothing(), "%+v", a)
		})
	}
}

func TestComputeActionsResizesSidecars(t *testing.T) {
	was, now := sized("proxy", "100m", "", ""), sized("proxy", "200m", "", "")
	always := v1.ContainerRestartPolicyAlways
	was.RestartPolicy, now.RestartPolicy = &always, &always
	app := ctr("app")
	pod := newPod(v1.RestartPolicyAlways, []v1.Container{now}, app)
	a := podsync.ComputeActions(pod, status(ready(), withResources(cst("s1", now, running, 0, 0), was), cst("a1", app, running, 0, 0)), podsync.Probes{})
	require.Len(t, a.ContainersToUpdate, 1)
	assert.True(t, a.ContainersToUpdate[0].Init)
	assert.Equal(t, 0, a.ContainersToUpdate[0].Index)
}

// While init runs, a started sidecar and the running regular init
// container are resized in place, as upstream's computeInitContainerActions
// (the regular one under InPlacePodVerticalScalingInitContainers, beta and
// on by default since 1.36); nothing else starts meanwhile.
func TestComputeActionsResizesDuringInit(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	proxyWas, proxyNow := sized("proxy", "100m", "", ""), sized("proxy", "200m", "", "")
	proxyWas.RestartPolicy, proxyNow.RestartPolicy = &always, &always
	setupWas, setupNow := sized("setup", "100m", "100m", "64Mi"), sized("setup", "200m", "200m", "128Mi")
	app := ctr("app")
	pod := newPod(v1.RestartPolicyAlways, []v1.Container{proxyNow, setupNow}, app)
	a := podsync.ComputeActions(pod, status(ready(),
		withResources(cst("p1", proxyNow, running, 0, 0), proxyWas),
		withResources(cst("i1", setupNow, running, 0, 0), setupWas)), podsync.Probes{})
	require.Len(t, a.ContainersToUpdate, 2, "%+v", a)
	for i, want := range []struct {
		id, name string
		index    int
		desired  v1.Container
	}{{"p1", "proxy", 0, proxyNow}, {"i1", "setup", 1, setupNow}} {
		u := a.ContainersToUpdate[i]
		assert.Equal(t, want.id, u.ID)
		assert.Equal(t, want.name, u.Name)
		assert.True(t, u.Init)
		assert.Equal(t, want.index, u.Index)
		assert.Equal(t, containerconfig.Resources(&v1.Pod{}, &want.desired).String(), u.Desired.String())
	}
	assert.Empty(t, a.ContainersToKill)
	assert.Empty(t, a.InitContainersToStart)
	assert.Empty(t, a.ContainersToStart)

	// Once the regular init container runs its spec's resources, nothing
	// is left to do but wait for it.
	a = podsync.ComputeActions(pod, status(ready(),
		withResources(cst("p1", proxyNow, running, 0, 0), proxyNow),
		withResources(cst("i1", setupNow, running, 0, 0), setupNow)), podsync.Probes{})
	assert.True(t, a.Nothing(), "%+v", a)
}

// SyncPod applies a running regular init container's resize with
// UpdateContainerResources, growing the pod's cgroup first, without
// restarting it.
func TestSyncPodResizesRunningInitContainer(t *testing.T) {
	h := newHarness(t)
	cg := &cgroupCalls{}
	s, err := podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Recorder: h.rec, PodCgroups: cg, Config: containerconfig.Options{LogRoot: t.TempDir()}})
	require.NoError(t, err)
	h.s = s
	pod := newPod(v1.RestartPolicyAlways, []v1.Container{sized("setup", "100m", "100m", "64Mi")}, ctr("app"))
	require.NoError(t, h.sync(pod).Err())
	st := h.status(pod)
	require.NotNil(t, st.ContainerByName("setup"))
	require.Nil(t, st.ContainerByName("app"), "the init container still runs")
	id := st.ContainerByName("setup").GetId()
	h.rec.TakeReasons()

	resized := pod.DeepCopy()
	resized.Spec.InitContainers[0] = sized("setup", "200m", "200m", "128Mi")
	r := h.sync(resized)
	require.NoError(t, r.Err())
	require.Len(t, r.Steps, 1)
	assert.Equal(t, podsync.StepResizePodInPlace, r.Steps[0].Step)
	assert.Equal(t, []bool{true, false}, cg.grow)
	assert.Empty(t, h.rec.TakeReasons(), "an in-place resize restarts nothing")
	got := h.status(resized).ContainerByName("setup")
	assert.Equal(t, id, got.GetId(), "resized in place, not restarted")
	assert.True(t, podsync.ResizeDone(resized, &resized.Spec.InitContainers[0], got))
	assert.Equal(t, int64(128<<20), got.GetResources().GetLinux().GetMemoryLimitInBytes())
	assert.Equal(t, int64(20000), got.GetResources().GetLinux().GetCpuQuota())
	assert.True(t, h.sync(resized).Actions.Nothing())
}

// cgroupCalls records PodCgroupResizer calls.
type cgroupCalls struct {
	grow []bool
	err  error
}

func (c *cgroupCalls) ResizePod(_ *v1.Pod, grow bool) error {
	c.grow = append(c.grow, grow)
	return c.err
}

func TestSyncPodResizesInPlace(t *testing.T) {
	h := newHarness(t)
	cg := &cgroupCalls{}
	s, err := podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Recorder: h.rec, PodCgroups: cg, Config: containerconfig.Options{LogRoot: t.TempDir()}})
	require.NoError(t, err)
	h.s = s
	pod := newPod(v1.RestartPolicyAlways, nil, sized("big", "1", "2", "256Mi"), sized("small", "100m", "200m", "64Mi"))
	require.NoError(t, h.sync(pod).Err())
	h.rec.TakeReasons()

	// One container shrinks and the other grows, for both resources.
	resized := pod.DeepCopy()
	resized.Spec.Containers[0] = sized("big", "500m", "1", "128Mi")
	resized.Spec.Containers[1] = sized("small", "200m", "400m", "128Mi")
	r := h.sync(resized)
	require.NoError(t, r.Err())
	require.Len(t, r.Steps, 1)
	assert.Equal(t, podsync.StepResizePodInPlace, r.Steps[0].Step)
	assert.Equal(t, []bool{true, false}, cg.grow, "the pod's cgroup grows before the containers change and shrinks after")
	assert.Empty(t, h.rec.TakeReasons(), "an in-place resize restarts nothing")
	assert.Len(t, h.rt.CallsOf(fake.CreateContainer), 2)

	st := h.status(resized)
	ids := map[string]string{}
	for _, c := range resized.Spec.Containers {
		cs := st.ContainerByName(c.Name)
		require.NotNil(t, cs)
		ids[cs.GetId()] = c.Name
		want, got := containerconfig.Resources(&v1.Pod{}, &c), cs.GetResources().GetLinux()
		assert.Equal(t, []int64{want.CpuShares, want.CpuQuota, want.MemoryLimitInBytes}, []int64{got.CpuShares, got.CpuQuota, got.MemoryLimitInBytes}, c.Name)
	}
	// Memory first, then CPU; within each, what falls before what rises.
	var order []string
	for _, c := range h.rt.CallsOf(fake.UpdateContainerResources) {
		req := c.Request.(*runtimeapi.UpdateContainerResourcesRequest)
		order = append(order, ids[req.GetContainerId()])
	}
	assert.Equal(t, []string{"big", "small", "big", "small"}, order)

	// Done: the next sync has nothing to do.
	assert.True(t, h.sync(resized).Actions.Nothing())
}

func TestSyncPodResizeFailure(t *testing.T) {
	h := newHarness(t)
	pod := newPod(v1.RestartPolicyAlways, nil, sized("app", "100m", "", ""))
	require.NoError(t, h.sync(pod).Err())
	h.rt.InjectFault(fake.UpdateContainerResources, fake.Fault{Err: cri.ErrUnavailable, Times: 1})
	resized := pod.DeepCopy()
	resized.Spec.Containers[0] = sized("app", "300m", "", "")
	r := h.sync(resized)
	require.Error(t, r.Err())
	assert.True(t, errors.Is(r.Err(), podsync.ErrResizePodInPlace))
	assert.Contains(t, r.Steps[0].Message, "container app: update cpu")
	// The next sync takes the resize up again.
	require.NoError(t, h.s.SyncPod(context.Background(), resized, h.status(resized)).Err())
	assert.True(t, h.sync(resized).Actions.Nothing())
}

// Where the node accounts swap, the swap limit follows the memory limit, at
// creation and at a resize: cgroup v1 refuses a memory limit above it.
func TestSwapLimitFollowsMemory(t *testing.T) {
	h := newHarness(t)
	s, err := podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Recorder: h.rec, Config: containerconfig.Options{LogRoot: t.TempDir(), MemorySwapController: true}})
	require.NoError(t, err)
	h.s = s
	pod := newPod(v1.RestartPolicyAlways, nil, sized("app", "", "", "64Mi"))
	require.NoError(t, h.sync(pod).Err())
	create := h.rt.CallsOf(fake.CreateContainer)[0].Request.(*runtimeapi.CreateContainerRequest)
	assert.Equal(t, int64(64<<20), create.GetConfig().GetLinux().GetResources().GetMemorySwapLimitInBytes())

	resized := pod.DeepCopy()
	resized.Spec.Containers[0] = sized("app", "", "", "128Mi")
	require.NoError(t, h.sync(resized).Err())
	up := h.rt.CallsOf(fake.UpdateContainerResources)[0].Request.(*runtimeapi.UpdateContainerResourcesRequest)
	assert.Equal(t, int64(128<<20), up.GetLinux().GetMemoryLimitInBytes())
	assert.Equal(t, int64(128<<20), up.GetLinux().GetMemorySwapLimitInBytes())
}

// A node's CFS period (cpuCFSQuotaPeriod) is the container's at creation
// and at an in-place resize of its CPU limit, its quota the limit's share of
// that period; the resize is weighed in milli-CPU, so the period asks for
// none by itself.
func TestResizeKeepsCFSQuotaPeriod(t *testing.T) {
	h := newHarness(t)
	s, err := podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Recorder: h.rec,
		Config: containerconfig.Options{LogRoot: t.TempDir(), CPUCFSQuotaPeriod: 50 * time.Millisecond}})
	require.NoError(t, err)
	h.s = s
	pod := newPod(v1.RestartPolicyAlways, nil, sized("app", "100m", "500m", ""))
	require.NoError(t, h.sync(pod).Err())
	create := h.rt.CallsOf(fake.CreateContainer)[0].Request.(*runtimeapi.CreateContainerRequest)
	res := create.GetConfig().GetLinux().GetResources()
	assert.Equal(t, []int64{50000, 25000}, []int64{res.GetCpuPeriod(), res.GetCpuQuota()}, "created: period, quota")
	assert.True(t, h.sync(pod).Actions.Nothing(), "the period alone is no resize")

	resized := pod.DeepCopy()
	resized.Spec.Containers[0] = sized("app", "100m", "1", "")
	require.NoError(t, h.sync(resized).Err())
	up := h.rt.CallsOf(fake.UpdateContainerResources)
	require.Len(t, up, 1)
	res = up[0].Request.(*runtimeapi.UpdateContainerResourcesRequest).GetLinux()
	assert.Equal(t, []int64{50000, 50000}, []int64{res.GetCpuPeriod(), res.GetCpuQuota()}, "resized: period, quota")
	assert.True(t, h.sync(resized).Actions.Nothing())
}

// A memory limit below what the container uses now is not asked of the
// runtime: the resize fails with upstream's words and waits.
func TestResizeMemoryBelowUsage(t *testing.T) {
	h := newHarness(t)
	pod := newPod(v1.RestartPolicyAlways, nil, sized("app", "", "", "64Mi"))
	require.NoError(t, h.sync(pod).Err())
	id := h.status(pod).ContainerByName("app").GetId()
	require.NoError(t, h.rt.SetContainerStats(id, &runtimeapi.ContainerStats{Memory: &runtimeapi.MemoryUsage{UsageBytes: &runtimeapi.UInt64Value{Value: 40 << 20}}}))
	resized := pod.DeepCopy()
	resized.Spec.Containers[0] = sized("app", "", "", "32Mi")
	r := h.sync(resized)
	require.ErrorIs(t, r.Err(), podsync.ErrResizePodInPlace)
	assert.Regexp(t, `memory limit \(\d+\) below current usage`, r.Steps[0].Message)
	assert.Empty(t, h.rt.CallsOf(fake.UpdateContainerResources))
	// Once it uses less, the resize goes through.
	require.NoError(t, h.rt.SetContainerStats(id, &runtimeapi.ContainerStats{Memory: &runtimeapi.MemoryUsage{UsageBytes: &runtimeapi.UInt64Value{Value: 8 << 20}}}))
	require.NoError(t, h.sync(resized).Err())
	assert.Len(t, h.rt.CallsOf(fake.UpdateContainerResources), 1)
}

// A memory request change alone restarts a container whose resizePolicy
// asks for a restart for memory, as upstream's: its creation recorded the
// request, which no cgroup holds.
func TestResizeMemoryRequestRestarts(t *testing.T) {
	h := newHarness(t)
	c := sized("app", "100m", "", "")
	c.Resources.Requests[v1.ResourceMemory] = resource.MustParse("32Mi")
	c.ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	pod := newPod(v1.RestartPolicyAlways, nil, c)
	require.NoError(t, h.sync(pod).Err())
	st := h.status(pod).ContainerByName("app")
	assert.Equal(t, "33554432", st.GetAnnotations()[containerconfig.MemoryRequestAnnotation])

	resized := pod.DeepCopy()
	resized.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("48Mi")
	a := podsync.ComputeActions(resized, h.status(resized), podsync.Probes{})
	require.Len(t, a.ContainersToKill, 1)
	assert.Equal(t, podsync.KillResizeRestart, a.ContainersToKill[0].Reason)
	assert.Equal(t, []int{0}, a.ContainersToStart)

	// Without the policy, a memory request asks nothing of the runtime.
	plain := sized("app", "100m", "", "")
	plain.Resources.Requests[v1.ResourceMemory] = resource.MustParse("32Mi")
	p2 := newPod(v1.RestartPolicyAlways, nil, plain)
	p2.UID = "uid-2"
	st2 := cst("c9", plain, running, 0, 0)
	withResources(st2, plain)
	plain.Resources.Requests[v1.ResourceMemory] = resource.MustParse("48Mi")
	p2.Spec.Containers[0] = plain
	assert.True(t, podsync.ComputeActions(p2, status(ready(), st2), podsync.Probes{}).Nothing())
}

func TestResizeDone(t *testing.T) {
	c := sized("app", "100m", "", "")
	c.Resources.Requests[v1.ResourceMemory] = resource.MustParse("32Mi")
	c.ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	st := withResources(cst("c1", c, running, 0, 0), c)
	st.Annotations[containerconfig.MemoryRequestAnnotation] = "33554432"
	assert.True(t, podsync.ResizeDone(&v1.Pod{}, &c, st))
	c.Resources.Requests[v1.ResourceMemory] = resource.MustParse("48Mi")
	assert.True(t, podsync.ResourcesMatch(&v1.Pod{}, &c, st), "no cgroup value changed")
	assert.False(t, podsync.ResizeDone(&v1.Pod{}, &c, st), "the container is to be restarted")
}

// podCgroup is a pod's cgroup for SyncPod: it records ResizePod calls and,
// when checked, reports itself resized once it was resized to the pod's
// spec.resources.
type podCgroup struct {
	cgroupCalls
	check bool
	has   *v1.ResourceRequirements // the pod-level resources it was last resized to
}

func (c *podCgroup) ResizePod(pod *v1.Pod, grow bool) error {
	if !grow {
		c.has = pod.Spec.Resources.DeepCopy()
	}
	return c.cgroupCalls.ResizePod(pod, grow)
}

// checkedPodCgroup is a podCgroup that answers PodCgroupChecker.
type checkedPodCgroup struct{ *podCgroup }

func (c checkedPodCgroup) PodResized(pod *v1.Pod) (bool, error) {
	return equality.Semantic.DeepEqual(c.has, pod.Spec.Resources), nil
}

// A pod-level resize (upstream's InPlacePodLevelResourcesVerticalScaling):
// the pod's cgroup is resized, grown before and shrunk after its
// containers, even when no container changes; a container without limits
// of its own follows the pod's new limits in place.
func TestSyncPodResizesPodLevel(t *testing.T) {
	podLevel := func(cpu, memory string) *v1.ResourceRequirements {
		l := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(memory)}
		return &v1.ResourceRequirements{Requests: l, Limits: l.DeepCopy()}
	}
	for _, tc := range []struct {
		name    string
		app     v1.Container
		checked bool
		// what the resize does: ResizePod calls, and the app container's
		// memory limit after it (0: not updated)
		grow      []bool
		appMemory int64
	}{
		{name: "containers with their own limits: the pod's cgroup alone", app: sized("app", "100m", "100m", "64Mi"),
			checked: true, grow: []bool{true, false}},
		{name: "a container without limits follows the pod's", app: ctr("app"),
			checked: true, grow: []bool{true, false}, appMemory: 512 << 20},
		{name: "without PodCgroupChecker the pod's cgroup is resized only beside its containers",
			app: sized("app", "100m", "100m", "64Mi")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			pc := &podCgroup{}
			var cg podsync.PodCgroupResizer = pc
			if tc.checked {
				cg = checkedPodCgroup{pc}
			}
			s, err := podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Recorder: h.rec, PodCgroups: cg, Config: containerconfig.Options{LogRoot: t.TempDir()}})
			require.NoError(t, err)
			h.s = s
			pod := newPod(v1.RestartPolicyAlways, nil, tc.app)
			pod.Spec.Resources = podLevel("1", "256Mi")
			pc.has = pod.Spec.Resources.DeepCopy() // as the cgroup was made
			require.NoError(t, h.sync(pod).Err())
			id := h.status(pod).ContainerByName("app").GetId()
			h.rec.TakeReasons()

			resized := pod.DeepCopy()
			resized.Spec.Resources = podLevel("2", "512Mi")
			r := h.sync(resized)
			require.NoError(t, r.Err())
			assert.Equal(t, tc.grow, pc.grow)
			if tc.grow == nil {
				assert.Empty(t, r.Steps)
				return
			}
			require.Len(t, r.Steps, 1)
			assert.Equal(t, podsync.StepResizePodInPlace, r.Steps[0].Step)
			assert.Empty(t, h.rec.TakeReasons(), "an in-place resize restarts nothing")
			got := h.status(resized).ContainerByName("app")
			assert.Equal(t, id, got.GetId(), "resized in place, not restarted")
			if tc.appMemory != 0 {
				assert.Equal(t, tc.appMemory, got.GetResources().GetLinux().GetMemoryLimitInBytes())
			}
			assert.True(t, podsync.ResizeDone(resized, &resized.Spec.Containers[0], got))
			pc.grow = nil
			again := h.sync(resized)
			assert.True(t, again.Actions.Nothing())
			assert.Empty(t, again.Steps, "the pod's cgroup has it: nothing more to do")
			assert.Empty(t, pc.grow)
		})
	}
}

// A pod-level resize that changes the memory limit of a container without
// limits of its own, whose resizePolicy says RestartContainer for memory,
// restarts it (with upstream's message) after the pod's cgroup took the
// new limits, as upstream's computePodResizeAction compares the limits a
// container gets from its pod.
func TestSyncPodResizesPodLevelRestartContainer(t *testing.T) {
	h := newHarness(t)
	pc := &podCgroup{}
	s, err := podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Recorder: h.rec, PodCgroups: checkedPodCgroup{pc},
		Config: containerconfig.Options{LogRoot: t.TempDir()}})
	require.NoError(t, err)
	h.s = s
	app := ctr("app")
	app.ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	pod := newPod(v1.RestartPolicyAlways, nil, app)
	l := func(memory string) *v1.ResourceRequirements {
		r := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse(memory)}
		return &v1.ResourceRequirements{Requests: r, Limits: r.DeepCopy()}
	}
	pod.Spec.Resources = l("256Mi")
	pc.has = pod.Spec.Resources.DeepCopy()
	require.NoError(t, h.sync(pod).Err())
	id := h.status(pod).ContainerByName("app").GetId()
	h.rec.TakeReasons()

	resized := pod.DeepCopy()
	resized.Spec.Resources = l("512Mi")
	r := h.sync(resized)
	require.NoError(t, r.Err())
	require.Len(t, r.Actions.ContainersToKill, 1)
	assert.Equal(t, "Container app resize requires restart", r.Actions.ContainersToKill[0].Message)
	assert.Equal(t, []bool{true, false}, pc.grow, "the pod's cgroup resized before the container starts again")
	got := h.status(resized).ContainerByName("app")
	assert.NotEqual(t, id, got.GetId(), "restarted")
	assert.Equal(t, int64(512<<20), got.GetResources().GetLinux().GetMemoryLimitInBytes())
	pc.grow = nil
	assert.True(t, h.sync(resized).Actions.Nothing())
	assert.Empty(t, pc.grow)
}

// A container restarted for its resize in a pod without pod-level
// resources: the pod's cgroup, whose CPU quota is the sum of its
// containers' limits, is grown before the container starts again (cgroup
// v1 refuses a child's quota above its parent's) and shrunk after, as
// upstream's UpdatePodResources.
func TestSyncPodResizeRestartResizesPodCgroup(t *testing.T) {
	h := newHarness(t)
	cg := &cgroupCalls{}
	s, err := podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Recorder: h.rec, PodCgroups: cg, Config: containerconfig.Options{LogRoot: t.TempDir()}})
	require.NoError(t, err)
	h.s = s
	c := sized("app", "20m", "30m", "64Mi")
	c.ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.RestartContainer}}
	pod := newPod(v1.RestartPolicyAlways, nil, c)
	require.NoError(t, h.sync(pod).Err())
	id := h.status(pod).ContainerByName("app").GetId()
	assert.Empty(t, cg.grow)

	resized := pod.DeepCopy()
	resized.Spec.Containers[0].Resources.Limits[v1.ResourceCPU] = resource.MustParse("35m")
	r := h.sync(resized)
	require.NoError(t, r.Err())
	require.Len(t, r.Actions.ContainersToKill, 1)
	assert.Equal(t, podsync.KillResizeRestart, r.Actions.ContainersToKill[0].Reason)
	assert.Equal(t, []bool{true, false}, cg.grow, "the pod's cgroup resized with the restart")
	var steps []podsync.Step
	for _, st := range r.Steps {
		steps = append(steps, st.Step)
	}
	require.Contains(t, steps, podsync.StepResizePodInPlace)
	assert.Less(t, slices.Index(steps, podsync.StepResizePodInPlace), slices.Index(steps, podsync.StepStartContainer),
		"before the container starts again: %v", steps)
	got := h.status(resized).ContainerByName("app")
	assert.NotEqual(t, id, got.GetId(), "restarted")
	assert.Equal(t, int64(3500), got.GetResources().GetLinux().GetCpuQuota())
}

// sandboxCgroups is a pod cgroup resizer that also gives the sandbox's
// resources, as cgroups.Manager does.
type sandboxCgroups struct{ cgroupCalls }

func (*sandboxCgroups) SandboxResources(pod *v1.Pod) (overhead, resources *runtimeapi.LinuxContainerResources) {
	return cgroups.SandboxResources(pod, cgroups.PodOptions{})
}

// After a resize the runtime is told the pod's new resources
// (UpdatePodSandboxResources), after every container changed, as upstream's
// kubelet does; a runtime that does not implement it, or fails it, does not
// fail the resize.
func TestResizeNotifiesTheSandbox(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault error
	}{
		{"runtime takes it", nil},
		{"runtime without it", cri.ErrUnimplemented},
		{"runtime fails it", errors.New("boom")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			s, err := podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Recorder: h.rec, PodCgroups: &sandboxCgroups{},
				Config: containerconfig.Options{LogRoot: t.TempDir()}})
			require.NoError(t, err)
			h.s = s
			pod := newPod(v1.RestartPolicyAlways, nil, sized("app", "500m", "500m", "128Mi"))
			pod.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("8Mi")}
			require.NoError(t, h.sync(pod).Err())
			require.Empty(t, h.rt.CallsOf(fake.UpdatePodSandboxResources), "no resize yet")
			if tc.fault != nil {
				h.rt.InjectFault(fake.UpdatePodSandboxResources, fake.Fault{Err: tc.fault})
			}

			resized := pod.DeepCopy()
			resized.Spec.Containers[0] = sized("app", "1", "1", "256Mi")
			r := h.sync(resized)
			require.NoError(t, r.Err(), "the notification never fails the resize")
			calls := h.rt.Calls()
			last := calls[len(calls)-1]
			require.Equal(t, fake.UpdatePodSandboxResources, last.Method, "after the containers' updates")
			req := last.Request.(*runtimeapi.UpdatePodSandboxResourcesRequest)
			assert.NotEmpty(t, req.GetPodSandboxId())
			assert.Equal(t, []int64{102, 10000, 100000, 8 << 20},
				[]int64{req.GetOverhead().GetCpuShares(), req.GetOverhead().GetCpuQuota(), req.GetOverhead().GetCpuPeriod(), req.GetOverhead().GetMemoryLimitInBytes()}, "overhead")
			assert.Equal(t, []int64{1024, 100000, 100000, 256 << 20},
				[]int64{req.GetResources().GetCpuShares(), req.GetResources().GetCpuQuota(), req.GetResources().GetCpuPeriod(), req.GetResources().GetMemoryLimitInBytes()}, "the pod less its overhead")
		})
	}
}
