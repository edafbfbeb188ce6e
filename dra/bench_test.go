package dra_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kubeletkit/kubeletkit/dra"
)

// BenchmarkPrepareResources is the check before every sandbox: a pod
// without claims (nearly every pod, which must cost nothing), and one
// whose claim is read, checked and found to need a driver the node lacks.
func BenchmarkPrepareResources(b *testing.B) {
	m, err := dra.New(dra.Options{Claims: apiClaims(claim("gpu", "gpu.example.com"))})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("no claims", func(b *testing.B) {
		pod := podWith()
		b.ReportAllocs()
		for b.Loop() {
			if err := m.PrepareResources(ctx, pod); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("one claim, driver not registered", func(b *testing.B) {
		pod := podWith(byName("pc", "gpu"))
		b.ReportAllocs()
		for b.Loop() {
			if err := m.PrepareResources(ctx, pod); !errors.Is(err, dra.ErrDriverNotRegistered) {
				b.Fatal(err)
			}
		}
	})
}
