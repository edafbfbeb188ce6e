package probertest_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/prober"
	"github.com/kubeletkit/kubeletkit/prober/probertest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestRunner(t *testing.T) {
	r := probertest.NewRunner()
	boom := errors.New("boom")
	r.Set("db", prober.Liveness, prober.Outcome{}, boom)
	r.Set("app", prober.Readiness, prober.Outcome{Result: prober.Failure, Output: "no"}, nil)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}}
	cases := []struct {
		name      string
		container string
		typ       prober.ProbeType
		want      prober.Outcome
		err       error
	}{
		{"default success", "app", prober.Liveness, prober.Outcome{Result: prober.Success}, nil},
		{"scripted failure", "app", prober.Readiness, prober.Outcome{Result: prober.Failure, Output: "no"}, nil},
		{"scripted error", "db", prober.Liveness, prober.Outcome{}, boom},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := r.Probe(t.Context(), prober.Target{Pod: pod, Container: &v1.Container{Name: tc.container}, ContainerID: "c", Type: tc.typ})
			assert.Equal(t, tc.want, out)
			assert.ErrorIs(t, err, tc.err)
		})
	}
	require.Len(t, r.Calls(), 3)
	assert.Equal(t, probertest.Call{PodUID: "u", Container: "db", ContainerID: "c", Type: prober.Liveness}, r.Calls()[2])
}

func TestStatuses(t *testing.T) {
	s := probertest.NewStatuses()
	_, ok := s.GetPodStatus("u")
	assert.False(t, ok)
	s.Set("u", v1.PodStatus{PodIP: "10.0.0.1"})
	st, ok := s.GetPodStatus("u")
	assert.True(t, ok)
	assert.Equal(t, "10.0.0.1", st.PodIP)
	s.Delete("u")
	_, ok = s.GetPodStatus("u")
	assert.False(t, ok)
}
