package memorymanager

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"
)

// A checkpoint whose machine state the machine, the reservations and the
// assignments do not explain makes New fail with upstream's messages.
func TestRestoreRefuses(t *testing.T) {
	const gi = 1 << 30
	opts := func(dir string, nodes int, reservedMi int64) Options {
		o := Options{Policy: PolicyStatic, Machine: FakeMachine(nodes, 4*gi), StateDir: dir, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
		for i := range nodes {
			o.ReservedMemory = append(o.ReservedMemory, kubeletconfig.MemoryReservation{NumaNode: int32(i),
				Limits: v1.ResourceList{v1.ResourceMemory: *resource.NewQuantity(reservedMi<<20, resource.BinarySI)}})
		}
		o.KubeReserved = v1.ResourceList{v1.ResourceMemory: *resource.NewQuantity(int64(nodes)*reservedMi<<20, resource.BinarySI)}
		return o
	}
	// rewrite edits the checkpoint and seals it with a valid checksum.
	rewrite := func(t *testing.T, dir string, edit func(*checkpoint)) {
		p := filepath.Join(dir, StateFileName)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		var c checkpoint
		require.NoError(t, json.Unmarshal(b, &c))
		edit(&c)
		c.Checksum, err = c.sum()
		require.NoError(t, err)
		b, err = json.Marshal(c)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(p, b, 0o600))
	}
	admitted := func(t *testing.T, o Options) {
		m, err := New(o)
		require.NoError(t, err)
		two := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")}
		p := &v1.Pod{}
		p.UID, p.Name = "p", "p"
		p.Spec.Containers = []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: two, Limits: two}}}
		ok, reason, msg := m.Admit(p, nil)
		require.True(t, ok, "%s: %s", reason, msg)
	}
	for _, tc := range []struct {
		name   string
		reopen func(dir string) Options
		edit   func(*checkpoint)
		err    string
	}{
		{"reservations changed", func(dir string) Options { return opts(dir, 2, 256) }, nil,
			"[memorymanager] the expected machine state is different from the real one"},
		{"a NUMA node gone", func(dir string) Options { return opts(dir, 1, 1024) }, nil,
			"[memorymanager] the expected machine state is different from the real one"},
		{"an assignment on a NUMA node that does not exist", func(dir string) Options { return opts(dir, 2, 512) },
			func(c *checkpoint) { c.Entries["p"]["c"][0].NUMAAffinity = []int{5} },
			"[memorymanager] (pod: p, container: c) the memory assignment uses the NUMA that does not exist"},
		{"an assignment of an unknown resource", func(dir string) Options { return opts(dir, 2, 512) },
			func(c *checkpoint) { c.Entries["p"]["c"][0].Type = "hugepages-1Gi" },
			"[memorymanager] (pod: p, container: c) the memory assignment uses memory resource that does not exist"},
		{"assignments without machine state", func(dir string) Options { return opts(dir, 2, 512) },
			func(c *checkpoint) { c.MachineState = nil },
			"[memorymanager] machine state can not be empty when it has memory assignments"},
		{"free memory that does not add up", func(dir string) Options { return opts(dir, 2, 512) },
			func(c *checkpoint) { c.MachineState[0].MemoryMap[v1.ResourceMemory].Free++ },
			"[memorymanager] the expected machine state is different from the real one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			admitted(t, opts(dir, 2, 512))
			if tc.edit != nil {
				rewrite(t, dir, tc.edit)
			}
			_, err := New(tc.reopen(dir))
			require.Error(t, err)
			require.Equal(t, tc.err, err.Error())
			require.False(t, strings.Contains(err.Error(), "checkpoint is corrupted"))
		})
	}
	t.Run("an untouched checkpoint restores", func(t *testing.T) {
		dir := t.TempDir()
		admitted(t, opts(dir, 2, 512))
		m, err := New(opts(dir, 2, 512))
		require.NoError(t, err)
		p := &v1.Pod{}
		p.UID = "p"
		require.Equal(t, "0", m.ContainerMemoryNodes(p, &v1.Container{Name: "c"}))
		require.Len(t, m.Blocks("p", "c"), 1)
	})
}
