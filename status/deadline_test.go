package status

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPastActiveDeadline(t *testing.T) {
	ten := int64(10)
	withDeadline := mkPod(v1.RestartPolicyAlways, nil, ctr("a"))
	withDeadline.Spec.ActiveDeadlineSeconds = &ten
	started := metav1.NewTime(at(0))
	tests := []struct {
		name  string
		pod   *v1.Pod
		start *metav1.Time
		now   int
		want  bool
	}{
		{"no deadline", mkPod(v1.RestartPolicyAlways, nil, ctr("a")), &started, 1000, false},
		{"not started", withDeadline, nil, 1000, false},
		{"zero start time", withDeadline, &metav1.Time{}, 1000, false},
		{"before the deadline", withDeadline, &started, 9, false},
		{"at the deadline", withDeadline, &started, 10, true},
		{"after the deadline", withDeadline, &started, 11, true},
		{"nil pod", nil, &started, 11, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, PastActiveDeadline(tt.pod, tt.start, at(tt.now)))
		})
	}
}

func TestGenerateActiveDeadline(t *testing.T) {
	ten := int64(10)
	pod := mkPod(v1.RestartPolicyAlways, nil, ctr("a"))
	pod.Spec.ActiveDeadlineSeconds = &ten
	started := metav1.NewTime(at(0))
	old := v1.PodStatus{Phase: v1.PodRunning, StartTime: &started}

	s, err := Generate(Input{Pod: pod, Runtime: rt(running("a", "a1", 1, 0)), Old: &old, Now: at(9)})
	require.NoError(t, err)
	assert.Equal(t, v1.PodRunning, s.Phase)
	assert.Empty(t, s.Reason)

	// Past the deadline the pod fails while its container still runs (the
	// agent kills it next), as upstream's.
	s, err = Generate(Input{Pod: pod, Runtime: rt(running("a", "a1", 1, 0)), Old: &old, Now: at(10)})
	require.NoError(t, err)
	assert.Equal(t, v1.PodFailed, s.Phase)
	assert.Equal(t, ReasonDeadlineExceeded, s.Reason)
	assert.Equal(t, MessageDeadlineExceeded, s.Message)
	assert.Equal(t, v1.ConditionFalse, cond(s, v1.PodReady).Status)
	assert.Equal(t, started, *s.StartTime, "the start time does not move")

	// Once the container was killed the pod stays Failed with its reason,
	// whatever its restart policy.
	old = s
	s, err = Generate(Input{Pod: pod, Runtime: rt(exited("a", "a1", 1, 0, 137, "Error")), Old: &old, Now: at(12), PodIsTerminal: true})
	require.NoError(t, err)
	assert.Equal(t, v1.PodFailed, s.Phase)
	assert.Equal(t, ReasonDeadlineExceeded, s.Reason)
	assert.Equal(t, int32(137), status(s, "a").State.Terminated.ExitCode)

	// The API server's terminal phase stays final.
	done := pod.DeepCopy()
	done.Status.Phase = v1.PodSucceeded
	s, err = Generate(Input{Pod: done, Runtime: rt(exited("a", "a1", 1, 0, 0, "Completed")), Old: &v1.PodStatus{Phase: v1.PodSucceeded, StartTime: &started}, Now: at(100)})
	require.NoError(t, err)
	assert.Equal(t, v1.PodSucceeded, s.Phase)
}
