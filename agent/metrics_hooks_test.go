package agent_test

import (
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/prober"
	"github.com/kubeletkit/kubeletkit/volume"
)

// hookMetrics records what the optional Metrics extensions are told.
type hookMetrics struct {
	*recordingMetrics
	probes     map[probeKey]int
	pods       []bool      // failed
	containers [][2]string // type, code
	forgotten  []types.UID
	evictions  []string // signals
}

type probeKey struct {
	pod, container string
	typ            prober.ProbeType
	result         prober.Result
}

var (
	_ agent.ProbeMetrics    = (*hookMetrics)(nil)
	_ agent.StartMetrics    = (*hookMetrics)(nil)
	_ agent.EvictionMetrics = (*hookMetrics)(nil)
)

func (m *hookMetrics) Evicted(signal string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.evictions = append(m.evictions, signal)
}

func (m *hookMetrics) ObserveProbe(pod *v1.Pod, container string, t prober.ProbeType, r prober.Result) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.probes[probeKey{pod.Name, container, t, r}]++
}

func (m *hookMetrics) ForgetProbes(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.forgotten = append(m.forgotten, uid)
}

func (m *hookMetrics) StartedPod(failed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pods = append(m.pods, failed)
}

func (m *hookMetrics) StartedContainer(typ, code string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.containers = append(m.containers, [2]string{typ, code})
}

func podFromYAML(t *testing.T, manifest string) *v1.Pod {
	t.Helper()
	var p v1.Pod
	require.NoError(t, yaml.Unmarshal([]byte(manifest), &p))
	return &p
}

func restarts(p v1.Pod) int32 {
	if len(p.Status.ContainerStatuses) == 0 {
		return 0
	}
	return p.Status.ContainerStatuses[0].RestartCount
}

// The agent tells a Metrics that implements the optional extensions each
// probe run with its result, each sandbox and container start it attempts
// with how it failed (a crash-loop back-off is no attempt), and each
// finished pod it forgets.
func TestMetricsProbeAndStartHooks(t *testing.T) {
	oops := errors.New("oops")
	for _, tc := range []struct {
		name           string
		pod            string
		faults         map[fake.Method]fake.Fault
		until          func(p v1.Pod) bool
		wantPods       []bool
		wantContainers func(p v1.Pod) [][2]string
		wantProbe      probeKey
	}{
		{name: "a sandbox and a start fail once, then the pod runs and turns ready", pod: webPod,
			faults: map[fake.Method]fake.Fault{fake.RunPodSandbox: {Err: oops, Times: 1}, fake.StartContainer: {Err: oops, Times: 1}},
			until:  isReady, wantPods: []bool{true, false},
			wantContainers: func(v1.Pod) [][2]string { return [][2]string{{"container", "RunContainerError"}, {"container", ""}} },
			wantProbe:      probeKey{"web", "web", prober.Readiness, prober.Success}},
		{name: "init containers", pod: initPod, until: isRunning, wantPods: []bool{false},
			wantContainers: func(v1.Pod) [][2]string {
				return [][2]string{{"init_container", ""}, {"init_container", ""}, {"container", ""}}
			}},
		{name: "a crash loop's back-offs are no attempts", pod: crashPod,
			until: func(p v1.Pod) bool { return restarts(p) >= 3 }, wantPods: []bool{false},
			wantContainers: func(p v1.Pod) [][2]string {
				var want [][2]string
				for range restarts(p) + 1 {
					want = append(want, [2]string{"container", ""})
				}
				return want
			}},
		{name: "a failed liveness probe", pod: livePod, until: func(p v1.Pod) bool { return restarts(p) >= 1 },
			wantProbe: probeKey{"live", "app", prober.Liveness, prober.Failure}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := &hookMetrics{recordingMetrics: newRecordingMetrics(), probes: map[probeKey]int{}}
				n, _ := staticNode(t, agenttest.Options{Agent: agent.Options{Metrics: m}}, nil)
				for method, f := range tc.faults {
					n.Runtime().InjectFault(method, f)
				}
				pod := n.AddPod(podFromYAML(t, tc.pod))
				require.True(t, n.StepUntil(2*time.Minute, podIs(n, pod.Name, tc.until)), "pod %s", pod.Name)
				p := mustPod(t, n, pod.Name)

				m.mu.Lock()
				if tc.wantPods != nil {
					assert.Equal(t, tc.wantPods, m.pods, "sandbox starts")
				}
				if tc.wantContainers != nil {
					assert.Equal(t, tc.wantContainers(p), m.containers, "container starts")
				}
				if tc.wantProbe != (probeKey{}) {
					assert.Positive(t, m.probes[tc.wantProbe], "probes %v", m.probes)
				}
				assert.Empty(t, m.forgotten)
				m.mu.Unlock()

				n.DeletePodWithGrace(p.Namespace, p.Name, 0)
				require.True(t, n.StepUntil(time.Minute, func() bool {
					m.mu.Lock()
					defer m.mu.Unlock()
					return len(m.forgotten) > 0
				}), "the pod forgotten")
				m.mu.Lock()
				assert.Equal(t, []types.UID{p.UID}, m.forgotten)
				m.mu.Unlock()
			})
		})
	}
}

// startHookMetrics records what PodStartMetrics, ImagePullMetrics and
// ProbeDurationMetrics are told.
type startHookMetrics struct {
	*recordingMetrics
	totals, slis []time.Duration
	pulls        []pulled
	probeTimes   map[probeKey]int
}

type pulled struct {
	d    time.Duration
	size uint64
}

var (
	_ agent.PodStartMetrics      = (*startHookMetrics)(nil)
	_ agent.ImagePullMetrics     = (*startHookMetrics)(nil)
	_ agent.ProbeDurationMetrics = (*startHookMetrics)(nil)
)

func (m *startHookMetrics) PodStartTotalDuration(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.totals = append(m.totals, d)
}

func (m *startHookMetrics) PodStartSLIDuration(d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.slis = append(m.slis, d)
}

func (m *startHookMetrics) ImagePulled(d time.Duration, size uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pulls = append(m.pulls, pulled{d, size})
}

func (m *startHookMetrics) ObserveProbeDuration(pod *v1.Pod, container string, t prober.ProbeType, r prober.Result, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d >= 0 {
		m.probeTimes[probeKey{pod.Name, container, t, r}]++
	}
}

// The agent reports each pod's start once, as upstream's startup latency
// tracker: from its creation to every container running, and for the SLI
// less its image pulls (which ImagePullMetrics times, with the image's
// size) and its init containers' runs; a stateful pod's start is left out
// of the SLI. Each probe run is timed for ProbeDurationMetrics.
func TestMetricsPodStartAndPullHooks(t *testing.T) {
	slow := func(name string, volumes ...v1.Volume) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1.PodSpec{Volumes: volumes,
			InitContainers: []v1.Container{{Name: "setup", Image: "busybox:1.36", Command: []string{"sleep", "5"}}},
			Containers: []v1.Container{{Name: "app", Image: "registry.example/slow:1", Command: []string{"sleep", "3600"},
				ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 1}}}}}
	}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		wantSLIs int
	}{
		{name: "a stateless pod", pod: slow("web"), wantSLIs: 1},
		{name: "a stateful pod: no SLI", pod: slow("db", v1.Volume{Name: "data",
			VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/data"}}})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := &startHookMetrics{recordingMetrics: newRecordingMetrics(), probeTimes: map[probeKey]int{}}
				rules := append([]fake.Rule{{Command: []string{"sleep", "5"}, Behavior: exitAfter(0, 5*time.Second)}}, busybox...)
				n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Metrics: m}, Rules: rules})
				n.Runtime().SetPullBehavior("registry.example/slow:1", fake.PullBehavior{Latency: 10 * time.Second})
				pod := n.AddPod(tc.pod)
				require.True(t, n.StepUntil(2*time.Minute, podIs(n, pod.Name, isReady)), "pod %s", pod.Name)
				n.Step(5 * time.Second)

				m.mu.Lock()
				defer m.mu.Unlock()
				assert.Equal(t, []pulled{{0, 1 << 20}, {10 * time.Second, 1 << 20}}, m.pulls, "the init container's image, then the app's")
				assert.Equal(t, []time.Duration{15 * time.Second}, m.totals, "once: created, then the init container's pull, its 5s run and the app's 10s pull")
				if tc.wantSLIs == 0 {
					assert.Empty(t, m.slis)
				} else {
					assert.Equal(t, []time.Duration{0}, m.slis, "less the pulls and the init container's run")
				}
				assert.Positive(t, m.probeTimes[probeKey{pod.Name, "app", prober.Readiness, prober.Success}], "%v", m.probeTimes)
			})
		})
	}
}

// volumeHookMetrics records what VolumeMetrics is told.
type volumeHookMetrics struct {
	*recordingMetrics
	ops   [][2]string // operation, plugin
	count func() []volume.VolumeCount
}

var _ agent.VolumeMetrics = (*volumeHookMetrics)(nil)

func (m *volumeHookMetrics) ObserveVolumeOperation(op, plugin string, _ time.Duration, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil {
		m.ops = append(m.ops, [2]string{op, plugin})
	}
}

func (m *volumeHookMetrics) CountVolumes(count func() []volume.VolumeCount) { m.count = count }

// The agent reports its volume manager's operations to VolumeMetrics and
// gives it the manager's counts: a running pod's emptyDir was verified and
// mounted and counts as desired and set up; after the pod's deletion it
// was unmounted and counts no more.
func TestMetricsVolumeHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &volumeHookMetrics{recordingMetrics: newRecordingMetrics()}
		n, _ := staticNode(t, agenttest.Options{Agent: agent.Options{Metrics: m}}, nil)
		require.NotNil(t, m.count, "CountVolumes called by New")
		pod := n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cache"}, Spec: v1.PodSpec{
			Volumes:    []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			Containers: []v1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}}})
		require.True(t, n.StepUntil(time.Minute, podIs(n, pod.Name, isRunning)), "pod %s", pod.Name)
		m.mu.Lock()
		assert.Equal(t, [][2]string{{volume.OpVerifyAttached, volume.EmptyDirPluginName}, {volume.OpMount, volume.EmptyDirPluginName}}, m.ops)
		m.mu.Unlock()
		assert.Equal(t, []volume.VolumeCount{{Plugin: volume.EmptyDirPluginName, Desired: 1, Actual: 1}}, m.count())

		n.DeletePodWithGrace(pod.Namespace, pod.Name, 0)
		require.True(t, n.StepUntil(time.Minute, func() bool { return len(m.count()) == 0 }), "the volume torn down")
		m.mu.Lock()
		assert.Equal(t, [2]string{volume.OpUnmount, volume.EmptyDirPluginName}, m.ops[len(m.ops)-1])
		m.mu.Unlock()
	})
}

// draHookMetrics records what DRAMetrics is told.
type draHookMetrics struct {
	*recordingMetrics
	ops   []draOp
	calls int
	count func() map[string]int
}

type draOp struct {
	op     string
	failed bool
}

var _ agent.DRAMetrics = (*draHookMetrics)(nil)

func (m *draHookMetrics) ObserveDRAOperation(op string, _ time.Duration, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ops = append(m.ops, draOp{op, err != nil})
}

func (m *draHookMetrics) ObserveDRACall(string, string, codes.Code, time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
}

func (m *draHookMetrics) CountDRAClaims(count func() map[string]int) { m.count = count }

func (m *draHookMetrics) took() []draOp {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.ops)
}

// The agent gives DRAMetrics the DRA manager's count of the claims in use
// (none: "<any>" at 0) and reports each preparation before a sandbox and
// each unpreparation after a pod's containers stopped, as upstream's
// kubelet observes them for every pod: a pod without claims is prepared
// and unprepared at once; one whose claim's driver is not registered fails
// at each sync and calls no plugin.
func TestMetricsDRAHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &draHookMetrics{recordingMetrics: newRecordingMetrics()}
		n, _ := staticNode(t, agenttest.Options{Agent: agent.Options{Metrics: m}}, nil)
		require.NotNil(t, m.count, "CountDRAClaims called by New")
		assert.Equal(t, map[string]int{dra.AnyDriver: 0}, m.count())

		plain := n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}}})
		require.True(t, n.StepUntil(time.Minute, podIs(n, plain.Name, isRunning)), "pod %s", plain.Name)
		assert.Equal(t, []draOp{{dra.OpPrepareResources, false}}, m.took())

		n.DeletePodWithGrace(plain.Namespace, plain.Name, 0)
		require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod(plain.Namespace, plain.Name) == nil }), "pod gone")
		assert.Equal(t, []draOp{{dra.OpPrepareResources, false}, {dra.OpUnprepareResources, false}}, m.took())

		const uid = types.UID("00000000-0000-4000-8000-0000000000ad")
		claim := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "gpu", Namespace: "default", UID: "claim-uid"}}
		claim.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "trainer", UID: uid}}
		claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
			Results: []resourcev1.DeviceRequestAllocationResult{{Request: "gpu", Driver: "gpu.example.com", Pool: "node1", Device: "gpu-0"}}}}
		n.SetResourceClaim(claim)
		n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "trainer", UID: uid}, Spec: v1.PodSpec{
			ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("gpu")}},
			Containers: []v1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "3600"},
				Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "gpu"}}}}}}})
		require.True(t, n.StepUntil(time.Minute, func() bool { return len(m.took()) >= 3 }), "a preparation of trainer")
		assert.Equal(t, draOp{dra.OpPrepareResources, true}, m.took()[2], "the driver is not registered")
		assert.Equal(t, map[string]int{dra.AnyDriver: 0}, m.count())
		m.mu.Lock()
		assert.Zero(t, m.calls, "no plugin to call")
		m.mu.Unlock()
	})
}
