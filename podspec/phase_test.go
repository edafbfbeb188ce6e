package podspec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

func TestIsTerminal(t *testing.T) {
	for phase, want := range map[v1.PodPhase]bool{
		"": false, v1.PodPending: false, v1.PodRunning: false, v1.PodUnknown: false,
		v1.PodSucceeded: true, v1.PodFailed: true,
	} {
		assert.Equal(t, want, podspec.IsTerminal(phase), "phase %q", phase)
	}
}
