package podsync

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
)

func TestProbeGracePeriod(t *testing.T) {
	five, thirty := int64(5), int64(30)
	probe := &v1.Probe{TerminationGracePeriodSeconds: &five}
	for _, tc := range []struct {
		name   string
		pod    v1.Pod
		c      v1.Container
		reason KillReason
		want   *int64
	}{
		{name: "liveness probe's own grace period", c: v1.Container{LivenessProbe: probe}, reason: KillLivenessFailed, want: &five},
		{name: "startup probe's own grace period", c: v1.Container{StartupProbe: probe}, reason: KillStartupFailed, want: &five},
		{name: "the probe sets none: the pod's", c: v1.Container{LivenessProbe: &v1.Probe{}}, reason: KillLivenessFailed},
		{name: "another probe's does not count", c: v1.Container{StartupProbe: probe}, reason: KillLivenessFailed},
		{name: "another reason", c: v1.Container{LivenessProbe: probe}, reason: KillSpecChanged},
		{name: "a deletion's grace period wins", pod: v1.Pod{}, c: v1.Container{LivenessProbe: probe}, reason: KillLivenessFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := tc.pod
			if tc.name == "a deletion's grace period wins" {
				pod.DeletionGracePeriodSeconds = &thirty
			}
			assert.Equal(t, tc.want, probeGracePeriod(&pod, &tc.c, tc.reason))
		})
	}
}
