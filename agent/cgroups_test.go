package agent_test

import (
	"errors"
	"testing"
	"time"

	"github.com/kubeletkit/kubeletkit/agent"
)

func TestCgroupOptionsValidated(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts agent.Options
		want error
	}{
		{"pods without cgroupsPerQOS", agent.Options{Cgroups: agent.CgroupOptions{EnforceNodeAllocatable: []string{"pods"}}}, agent.ErrInvalidOptions},
		{"none alone", agent.Options{Cgroups: agent.CgroupOptions{EnforceNodeAllocatable: []string{"none"}}}, nil},
		{"none with another", agent.Options{Cgroups: agent.CgroupOptions{PerQOS: true, FS: "/nonexistent", EnforceNodeAllocatable: []string{"none", "pods"}}}, agent.ErrInvalidOptions},
		{"duplicate", agent.Options{Cgroups: agent.CgroupOptions{PerQOS: true, FS: "/nonexistent", EnforceNodeAllocatable: []string{"pods", "pods"}}}, agent.ErrInvalidOptions},
		{"system-reserved", agent.Options{Cgroups: agent.CgroupOptions{PerQOS: true, FS: "/nonexistent", EnforceNodeAllocatable: []string{"system-reserved"}}}, agent.ErrInvalidOptions},
		{"unknown", agent.Options{Cgroups: agent.CgroupOptions{PerQOS: true, FS: "/nonexistent", EnforceNodeAllocatable: []string{"all"}}}, agent.ErrInvalidOptions},
		{"systemd", agent.Options{Cgroups: agent.CgroupOptions{PerQOS: true, FS: "/nonexistent", Driver: "systemd"}}, nil},
		{"unknown driver", agent.Options{Cgroups: agent.CgroupOptions{PerQOS: true, FS: "/nonexistent", Driver: "lxcfs"}}, agent.ErrInvalidOptions},
		{"pods", agent.Options{Cgroups: agent.CgroupOptions{PerQOS: true, FS: "/nonexistent", EnforceNodeAllocatable: []string{"pods"}}}, nil},
		{"CFS period 50ms", agent.Options{Cgroups: agent.CgroupOptions{CPUCFSQuotaPeriod: 50 * time.Millisecond}}, nil},
		{"CFS period below 1ms", agent.Options{Cgroups: agent.CgroupOptions{CPUCFSQuotaPeriod: 500 * time.Microsecond}}, agent.ErrInvalidOptions},
		{"CFS period above 1s", agent.Options{Cgroups: agent.CgroupOptions{CPUCFSQuotaPeriod: 2 * time.Second}}, agent.ErrInvalidOptions},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.RootDir = t.TempDir()
			_, err := agent.New(tc.opts)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("New: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestNodeOptionsValidated(t *testing.T) {
	_, err := agent.New(agent.Options{RootDir: t.TempDir(), Node: agent.NodeOptions{MaxPods: -1}})
	if !errors.Is(err, agent.ErrInvalidOptions) || err.Error() != "agent: Node.MaxPods -1 must not be a negative number: invalid options" {
		t.Fatalf("New with a negative MaxPods: %v", err)
	}
	for _, o := range []agent.NodeOptions{{MaxPods: 500}, {MaxParallelImagePulls: -1}, {MaxParallelImagePulls: 5}} {
		if _, err := agent.New(agent.Options{RootDir: t.TempDir(), Node: o}); err != nil {
			t.Fatalf("New with %+v: %v", o, err)
		}
	}
}
