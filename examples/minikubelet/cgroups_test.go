package main

import (
	"io"
	"os"
	"slices"
	"testing"

	"github.com/kubeletkit/kubeletkit/agent"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
)

// The cgroup flags: upstream's defaults on a real runtime (which needs
// root), none on the embedded fake runtime, and /configz says which.
func TestCgroupFlags(t *testing.T) {
	root := os.Geteuid() == 0
	for _, tc := range []struct {
		name      string
		args      []string
		qos       bool
		enforce   []string
		wantErr   bool
		reportNon bool // configz enforcement "none"
	}{
		{name: "fake runtime", args: nil, qos: false, reportNon: true},
		{name: "real runtime", args: []string{"--container-runtime-endpoint", "unix:///x.sock"}, qos: root, enforce: []string{"pods"}, wantErr: !root},
		{name: "off", args: []string{"--container-runtime-endpoint", "unix:///x.sock", "--cgroups-per-qos=false"}, reportNon: true},
		{name: "off, enforcement asked", args: []string{"--container-runtime-endpoint", "unix:///x.sock", "--cgroups-per-qos=false", "--enforce-node-allocatable", "pods"},
			enforce: []string{"pods"}},
		{name: "none", args: []string{"--container-runtime-endpoint", "unix:///x.sock", "--enforce-node-allocatable", ""}, qos: root, wantErr: !root, reportNon: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseFlags(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			var opts agent.Options
			err = cgroupOptions(c, &opts)
			if tc.wantErr {
				if err == nil {
					t.Fatal("no error without root")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if opts.CgroupsPerQOS != tc.qos || !slices.Equal(opts.EnforceNodeAllocatable, tc.enforce) {
				t.Fatalf("CgroupsPerQOS %v, EnforceNodeAllocatable %q; want %v, %q", opts.CgroupsPerQOS, opts.EnforceNodeAllocatable, tc.qos, tc.enforce)
			}
			kc := &kubeletconfig.KubeletConfiguration{}
			cgroupSettings(kc, &opts)
			if *kc.CgroupsPerQOS != tc.qos || (tc.reportNon != slices.Equal(kc.EnforceNodeAllocatable, []string{"none"})) {
				t.Errorf("configz: cgroupsPerQOS %v, enforceNodeAllocatable %q", *kc.CgroupsPerQOS, kc.EnforceNodeAllocatable)
			}
			if tc.qos && (kc.CgroupDriver != "cgroupfs" || kc.CgroupRoot != "/") {
				t.Errorf("configz: driver %q, root %q", kc.CgroupDriver, kc.CgroupRoot)
			}
		})
	}
}
