package validation_test

import (
	"testing"

	"github.com/kubeletkit/kubeletkit/podspec/validation"
)

// BenchmarkValidatePod is the API server's checks on a defaulted pod that
// uses most of what ValidatePod walks: four volumes of four kinds, an init
// container, a container with a port, env, resources, two mounts, three
// probes and a preStop hook (validPod).
func BenchmarkValidatePod(b *testing.B) {
	pod := validPod()
	b.ReportAllocs()
	for b.Loop() {
		if err := validation.ValidatePod(pod); err != nil {
			b.Fatal(err)
		}
	}
}
