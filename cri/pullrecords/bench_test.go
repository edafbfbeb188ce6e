package pullrecords_test

import (
	"fmt"
	"testing"

	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
)

// BenchmarkDecide is the check of every container start whose image is
// present (pull policy IfNotPresent or Never): a preloaded image under the
// default policy, an image every pod may use, and the worst case a record
// can hold, the pod's secret the last of rememberLimit's worth under its
// image's name.
func BenchmarkDecide(b *testing.B) {
	const image = "registry.example/team/app:1.2"
	var many []pullrecords.Secret
	for i := range 100 {
		many = append(many, pullrecords.Secret{Namespace: "ns", Name: fmt.Sprintf("s%03d", i), UID: fmt.Sprintf("uid-%03d", i), CredentialHash: fmt.Sprintf("h%03d", i)})
	}
	last := many[len(many)-1]
	for _, bc := range []struct {
		name string
		in   pullrecords.Input
		want pullrecords.Verdict
	}{
		{"preloaded", pullrecords.Input{Image: image, Policy: pullrecords.NeverVerifyPreloadedImages}, pullrecords.PolicyAllows},
		{"node-wide record", pullrecords.Input{Image: image, Policy: pullrecords.AlwaysVerify,
			Record: record("registry.example/team/app", pullrecords.Credentials{NodePodsAccessible: true})}, pullrecords.RecordAllows},
		{"100 secrets, the pod's last", pullrecords.Input{Image: image, Policy: pullrecords.AlwaysVerify,
			Record: record("registry.example/team/app", pullrecords.Credentials{Secrets: many}),
			Pod:    pod([]pullrecords.Secret{last}, nil)}, pullrecords.RecordAllows},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d := pullrecords.Decide(bc.in); d.Verdict != bc.want {
					b.Fatalf("verdict %v, want %v", d.Verdict, bc.want)
				}
			}
		})
	}
}
