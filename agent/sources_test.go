package agent_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// edgePod is a pod as an edge agent's own source sends it: no defaults.
func edgePod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}},
	}
}

// A custom source's name is checked by New, which names the field.
func TestCustomSourceOptions(t *testing.T) {
	ch := make(chan syncloop.PodUpdate)
	cases := []struct {
		name    string
		sources []agent.PodSource
		want    string
	}{
		{"empty name", []agent.PodSource{{Updates: ch}}, "Sources.Custom[0].Name is empty"},
		{"file", []agent.PodSource{{Name: "file", Updates: ch}}, `Sources.Custom[0].Name "file" is reserved`},
		{"http", []agent.PodSource{{Name: "http", Updates: ch}}, `Sources.Custom[0].Name "http" is reserved`},
		{"api", []agent.PodSource{{Name: "api", Updates: ch}}, `Sources.Custom[0].Name "api" is reserved`},
		{"all", []agent.PodSource{{Name: "*", Updates: ch}}, `Sources.Custom[0].Name "*" is reserved`},
		{"twice", []agent.PodSource{{Name: "edge", Updates: ch}, {Name: "edge", Updates: ch}}, `Sources.Custom[1].Name "edge" is also Sources.Custom[0]'s`},
		{"no channel", []agent.PodSource{{Name: "edge"}}, `Sources.Custom[0] ("edge").Updates is nil`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agent.New(agent.Options{RootDir: t.TempDir(), Sources: agent.SourceOptions{Custom: tc.sources}})
			require.ErrorIs(t, err, agent.ErrInvalidOptions)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// Pods of two custom sources run side by side, each with its source's name
// as config source, as static pods with the API server's defaults; a SET
// replaces its own source's pods only.
func TestCustomSources(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		east, west := make(chan syncloop.PodUpdate), make(chan syncloop.PodUpdate)
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Sources: agent.SourceOptions{Custom: []agent.PodSource{
			{Name: "east", Updates: east}, {Name: "west", Updates: west},
		}}}})
		east <- syncloop.PodUpdate{Op: syncloop.OpSet, Pods: []*v1.Pod{edgePod("a")}}
		west <- syncloop.PodUpdate{Op: syncloop.OpAdd, Pods: []*v1.Pod{edgePod("b")}}
		require.True(t, n.StepUntil(time.Minute, func() bool {
			return n.Pod("default", "a").Status.Phase == v1.PodRunning && n.Pod("default", "b").Status.Phase == v1.PodRunning
		}), "both run")
		for name, src := range map[string]string{"a": "east", "b": "west"} {
			p, ok := n.Agent().API().Pod("default", name)
			require.True(t, ok, name)
			assert.Equal(t, src, p.Annotations[podspec.ConfigSourceAnnotation], name)
			assert.True(t, podspec.IsStatic(p), "a custom source's pods are static pods")
			assert.Equal(t, v1.RestartPolicyAlways, p.Spec.RestartPolicy, "with the API server's defaults")
		}
		// west's SET without b removes b, and only b.
		west <- syncloop.PodUpdate{Op: syncloop.OpSet}
		require.True(t, n.StepUntil(time.Minute, func() bool { return runningContainers(n, "uid-b") == 0 }), "b stopped")
		assert.Equal(t, 1, runningContainers(n, "uid-a"))
	})
}

// Housekeeping, which kills what runs in the runtime and no source asks
// for, waits until every custom source has sent a SET: a pod left running
// by an earlier agent is taken for an orphan only then.
func TestHousekeepingWaitsForEveryCustomSource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		east, west := make(chan syncloop.PodUpdate), make(chan syncloop.PodUpdate)
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Sources: agent.SourceOptions{Custom: []agent.PodSource{
			{Name: "east", Updates: east}, {Name: "west", Updates: west},
		}}}})
		_, err := n.Runtime().RunPodSandbox(context.Background(), &runtimeapi.PodSandboxConfig{
			Metadata: &runtimeapi.PodSandboxMetadata{Name: "left", Namespace: "default", Uid: "uid-left"},
			Labels:   cri.PodLabels("uid-left", "left", "default"),
		}, "")
		require.NoError(t, err)
		ready := func() bool {
			for _, sb := range n.Runtime().Sandboxes() {
				if sb.GetMetadata().GetUid() == "uid-left" {
					return sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY
				}
			}
			return false
		}
		east <- set()
		n.Step(10 * time.Second)
		assert.True(t, ready(), "west has sent nothing: nothing is an orphan yet")
		west <- set()
		assert.True(t, n.StepUntil(10*time.Second, func() bool { return !ready() }), "the orphan is killed once both have")
	})
}

// Every pod dropped, whatever the reason, is reported with a Warning event
// on the pod that names the reason, with no Logger set.
func TestDroppedPodsAreReported(t *testing.T) {
	withUID := func(p *v1.Pod, uid string) *v1.Pod { p.UID = types.UID(uid); return p }
	mirror := edgePod("m")
	mirror.Annotations = map[string]string{podspec.ConfigMirrorAnnotation: "hash"}
	noImage := edgePod("noimage")
	noImage.Spec.Containers[0].Image = ""
	huge := edgePod("huge")
	huge.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("64")}
	cases := []struct {
		name   string
		other  []*v1.Pod // sent first by the other source
		update syncloop.PodUpdate
		want   string // the event, as agenttest prints it
	}{
		{"no UID", nil, set(withUID(edgePod("a"), "")),
			"Pod default/a Warning FailedValidation Error validating pod a_default() from edge due to it has no UID, ignoring"},
		{"no name", nil, set(withUID(&v1.Pod{}, "x")),
			"Pod default/ Warning FailedValidation Error validating pod _default(x) from edge due to it has no name, ignoring"},
		{"a name twice in a message", nil, set(edgePod("a"), withUID(edgePod("a"), "other")),
			`Pod default/a Warning FailedValidation Error validating pod a_default(other) from edge due to duplicate pod name "a", ignoring`},
		{"a name another source holds", []*v1.Pod{edgePod("a")}, set(withUID(edgePod("a"), "other")),
			`Pod default/a Warning FailedValidation Error validating pod a_default(other) from edge due to duplicate pod name "a", held by pod uid-a from other, ignoring`},
		{"invalid", nil, set(noImage),
			"Pod default/noimage Warning FailedValidation Error validating pod noimage_default(uid-noimage) from edge due to invalid pod default/noimage: spec.containers[0].image: Required value, ignoring"},
		{"a mirror pod", nil, set(mirror),
			"Pod default/m Warning FailedValidation Error validating pod m_default(uid-m) from edge due to it is a mirror pod (annotation kubernetes.io/config.mirror), which only the API server sends, ignoring"},
		{"an unknown operation", nil, syncloop.PodUpdate{Op: syncloop.Operation(42), Pods: []*v1.Pod{edgePod("a")}},
			"Pod default/a Warning FailedValidation Error validating pod a_default(uid-a) from edge due to unknown operation Operation(42), ignoring"},
		// A custom source's pods are static, so critical: one that does not
		// fit is refused after the preemption it may try, as upstream.
		{"refused by admission", nil, set(huge),
			"Pod default/huge Warning UnexpectedAdmissionError Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: [(res: cpu, q: 60000), ]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				edge, other := make(chan syncloop.PodUpdate), make(chan syncloop.PodUpdate)
				n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Sources: agent.SourceOptions{Custom: []agent.PodSource{
					{Name: "other", Updates: other}, {Name: "edge", Updates: edge},
				}}}})
				other <- syncloop.PodUpdate{Op: syncloop.OpSet, Pods: tc.other}
				n.Step(time.Second)
				edge <- tc.update
				n.Step(2 * time.Second)
				var got []string
				for _, e := range n.Events() {
					if e.Type == v1.EventTypeWarning {
						got = append(got, e.String())
					}
				}
				assert.Contains(t, got, tc.want)
			})
		})
	}
}

func set(pods ...*v1.Pod) syncloop.PodUpdate {
	return syncloop.PodUpdate{Op: syncloop.OpSet, Pods: pods}
}
