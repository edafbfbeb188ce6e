package startup_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/status/startup"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func mt(s float64) metav1.Time { return metav1.NewTime(at(s)) }

func newPod(mutate ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web", CreationTimestamp: mt(0)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app"}}}}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func running(startedAt float64) v1.ContainerStatus {
	return v1.ContainerStatus{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: mt(startedAt)}}}
}

func exited(name, id string, from, to float64) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		ContainerID: id, StartedAt: mt(from), FinishedAt: mt(to)}}}
}

func TestStarted(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   v1.PodStatus
		want bool
	}{
		{"no containers", v1.PodStatus{}, true},
		{"every container running", v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{running(1), running(2)}}, true},
		{"one waiting", v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{running(1), {Name: "b"}}}, false},
		{"running without a start time", v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
			{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}, false},
		{"exited", v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{exited("app", "c1", 1, 2)}}, false},
		{"init containers do not count", v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{{Name: "init"}},
			ContainerStatuses: []v1.ContainerStatus{running(1)}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, startup.Started(&tc.st)) })
	}
}

func TestStateful(t *testing.T) {
	vol := func(s v1.VolumeSource) func(*v1.Pod) {
		return func(p *v1.Pod) { p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "v", VolumeSource: s}) }
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want bool
	}{
		{"no volumes", newPod(), false},
		{"secret, configMap, downwardAPI, emptyDir", newPod(vol(v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}),
			vol(v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}), vol(v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{}}),
			vol(v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}})), false},
		{"a service account token (projected)", newPod(vol(v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{}})), false},
		{"gitRepo, image, generic ephemeral", newPod(vol(v1.VolumeSource{GitRepo: &v1.GitRepoVolumeSource{}}),
			vol(v1.VolumeSource{Image: &v1.ImageVolumeSource{}}), vol(v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}})), false},
		{"CSI ephemeral", newPod(vol(v1.VolumeSource{CSI: &v1.CSIVolumeSource{
			VolumeAttributes: map[string]string{"csi.storage.k8s.io/ephemeral": "true"}}})), false},
		{"CSI inline, not ephemeral", newPod(vol(v1.VolumeSource{CSI: &v1.CSIVolumeSource{}})), true},
		{"a persistent volume claim", newPod(vol(v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}),
			vol(v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}})), true},
		{"hostPath", newPod(vol(v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/data"}})), true},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, startup.Stateful(tc.pod)) })
	}
}

func TestUnschedulable(t *testing.T) {
	cond := func(s v1.ConditionStatus) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse}, {Type: v1.PodScheduled, Status: s}}
		}
	}
	assert.False(t, startup.Unschedulable(newPod()))
	assert.False(t, startup.Unschedulable(newPod(cond(v1.ConditionTrue))))
	assert.True(t, startup.Unschedulable(newPod(cond(v1.ConditionFalse))))
}

func TestPullTime(t *testing.T) {
	iv := func(from, to float64) startup.Interval { return startup.Interval{Start: at(from), End: at(to)} }
	for _, tc := range []struct {
		name  string
		pulls []startup.Interval
		want  float64
	}{
		{"none", nil, 0},
		{"one", []startup.Interval{iv(1, 3)}, 2},
		{"apart", []startup.Interval{iv(1, 3), iv(5, 6)}, 3},
		{"overlapping", []startup.Interval{iv(1, 4), iv(3, 6)}, 5},
		{"one inside another", []startup.Interval{iv(1, 10), iv(2, 3)}, 9},
		{"out of order", []startup.Interval{iv(5, 6), iv(1, 3), iv(2, 4)}, 4},
		{"touching", []startup.Interval{iv(1, 2), iv(2, 3)}, 2},
		{"backwards counts nothing", []startup.Interval{iv(3, 1), iv(4, 5)}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, time.Duration(tc.want*float64(time.Second)), startup.PullTime(tc.pulls))
		})
	}
}

func TestInitContainerTime(t *testing.T) {
	withInits := newPod(func(p *v1.Pod) {
		p.Spec.InitContainers = []v1.Container{{Name: "setup"}, {Name: "migrate"},
			{Name: "proxy", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}}
	})
	retried := exited("setup", "c2", 4, 5)
	retried.LastTerminationState = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "c1", StartedAt: mt(1), FinishedAt: mt(3)}}
	for _, tc := range []struct {
		name string
		st   v1.PodStatus
		want time.Duration
	}{
		{"none ran", v1.PodStatus{}, 0},
		{"two ran", v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{exited("setup", "c1", 1, 3), exited("migrate", "c2", 3, 7)}}, 6 * time.Second},
		{"a retry and its last run", v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{retried}}, 3 * time.Second},
		{"a sidecar is not excluded", v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{exited("proxy", "c3", 1, 9)}}, 0},
		{"one still running", v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{
			{Name: "setup", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: mt(1)}}}}}, 0},
		{"an unknown container", v1.PodStatus{InitContainerStatuses: []v1.ContainerStatus{exited("gone", "c4", 1, 9)}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, startup.InitContainerTime(withInits, &tc.st)) })
	}
}

// step is one thing a Tracker is told.
type step struct {
	add       *v1.Pod
	pullStart float64
	pullEnd   float64
	observe   *v1.PodStatus
	at        float64
	forget    bool
	want      *startup.Observation // for observe: nil means no answer
}

func TestTracker(t *testing.T) {
	started := &v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{running(9)}}
	pending := &v1.PodStatus{Phase: v1.PodPending, ContainerStatuses: []v1.ContainerStatus{{Name: "app"}}}
	obs := func(total, sli float64, counts bool) *startup.Observation {
		return &startup.Observation{Total: time.Duration(total * float64(time.Second)), SLI: time.Duration(sli * float64(time.Second)), CountsForSLI: counts}
	}
	withInit := newPod(func(p *v1.Pod) { p.Spec.InitContainers = []v1.Container{{Name: "setup"}} })
	initDone := &v1.PodStatus{Phase: v1.PodPending, InitContainerStatuses: []v1.ContainerStatus{exited("setup", "c1", 4, 6)},
		ContainerStatuses: []v1.ContainerStatus{{Name: "app"}}}
	initStarted := &v1.PodStatus{Phase: v1.PodRunning, InitContainerStatuses: []v1.ContainerStatus{exited("setup", "c1", 4, 6)},
		ContainerStatuses: []v1.ContainerStatus{running(8)}}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{name: "no pulls: SLI is total", steps: []step{
			{add: newPod()},
			{observe: pending, at: 2},
			{observe: started, at: 10, want: obs(10, 10, true)},
			{observe: started, at: 11}, // once
		}},
		{name: "pulls are left out of the SLI, overlaps once", steps: []step{
			{add: newPod()},
			{pullStart: 1, pullEnd: 4},
			{pullStart: 3, pullEnd: 5},
			{observe: started, at: 10, want: obs(10, 6, true)},
		}},
		{name: "a failed pull's start pairs with the next success, as upstream", steps: []step{
			{add: newPod()},
			{pullStart: 1},             // failed: no end
			{pullStart: 6, pullEnd: 7}, // the end pairs with 1
			{observe: started, at: 10, want: obs(10, 4, true)},
		}},
		{name: "init containers' runs are left out", steps: []step{
			{add: withInit},
			{pullStart: 1, pullEnd: 2},
			{observe: initDone, at: 7},
			{observe: initStarted, at: 10, want: obs(10, 7, true)},
		}},
		{name: "a stateful pod: total only", steps: []step{
			{add: newPod(func(p *v1.Pod) {
				p.Spec.Volumes = []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/d"}}}}
			})},
			{observe: started, at: 3, want: obs(3, 3, false)},
		}},
		{name: "a pod that started before the node saw it is not timed", steps: []step{
			{add: newPod(func(p *v1.Pod) { p.Status.StartTime = ptr.To(mt(1)) })},
			{observe: started, at: 10},
		}},
		{name: "a pod without a creation time is not timed", steps: []step{
			{add: newPod(func(p *v1.Pod) { p.CreationTimestamp = metav1.Time{} })},
			{observe: started, at: 10},
		}},
		{name: "an unschedulable pod is never timed", steps: []step{
			{add: newPod(func(p *v1.Pod) {
				p.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse}}
			})},
			{add: newPod()},
			{observe: started, at: 10},
		}},
		{name: "a terminal status drops the pod", steps: []step{
			{add: newPod()},
			{observe: &v1.PodStatus{Phase: v1.PodFailed}, at: 2},
			{observe: started, at: 10},
		}},
		{name: "a terminal pod is not followed", steps: []step{
			{add: newPod(func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded })},
			{observe: started, at: 10},
		}},
		{name: "forgotten", steps: []step{
			{add: newPod()},
			{forget: true},
			{observe: started, at: 10},
		}},
		{name: "a pod never added", steps: []step{
			{pullStart: 1, pullEnd: 2},
			{observe: started, at: 10},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := startup.New()
			pod := newPod()
			for i, s := range tc.steps {
				switch {
				case s.add != nil:
					pod = s.add
					tr.Add(pod)
				case s.forget:
					tr.Forget(pod.UID)
				case s.observe != nil:
					got, ok := tr.Observe(pod, s.observe, at(s.at))
					if s.want == nil {
						assert.False(t, ok, "step %d: %+v", i, got)
						continue
					}
					if assert.True(t, ok, "step %d", i) {
						assert.Equal(t, *s.want, got, "step %d", i)
					}
				default:
					tr.PullStarted(pod.UID, at(s.pullStart))
					if s.pullEnd != 0 {
						tr.PullFinished(pod.UID, at(s.pullEnd))
					}
				}
			}
		})
	}
}
