package agent

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/eviction/evictiontest"
	"github.com/kubeletkit/kubeletkit/nodeshutdown"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// Run starts the parts in the order they rely on (newRunnables); a part
// the options leave out is not listed.
func TestRunnablesInStartOrder(t *testing.T) {
	names := func(a *Agent) []string {
		var n []string
		for _, r := range a.runnables {
			n = append(n, r.name)
		}
		return n
	}
	stats := &evictiontest.Stats{} // the same parts on every OS
	a, err := New(Options{RootDir: t.TempDir(), Eviction: EvictionOptions{Stats: stats}, Node: NodeOptions{ResolvConf: ResolvConfNone, PulledImages: PulledImagesOptions{Off: true}}})
	require.NoError(t, err)
	t.Cleanup(a.fakeRT.Close)
	assert.Equal(t, []string{"directories", "runtime-version", "first-relist", "fake-runtime",
		"container-deletor", "pleg", "podworkers", "status", "prober", "image-gc", "eviction", "node-status", "container-logs", "volumes", "plugins",
		"syncloop"}, names(a))

	trigger := nodeshutdown.TriggerFunc(func(context.Context, nodeshutdown.Handler) error { return nil })
	a, err = New(Options{RootDir: t.TempDir(),
		HTTP:    HTTPOptions{Listen: "127.0.0.1:0", API: &APIOptions{Listen: "127.0.0.1:0"}},
		Sources: SourceOptions{ManifestPath: t.TempDir(), ManifestURL: "http://127.0.0.1:1/pods", ObjectPath: t.TempDir()},
		Cluster: ClusterOptions{Updates: make(chan syncloop.PodUpdate),
			ResourceSlices: dra.ResourceSlicesFunc(func(context.Context, string) error { return nil })},
		Node:     NodeOptions{DevicePluginDir: t.TempDir()},
		Cgroups:  CgroupOptions{PerQOS: true, FS: t.TempDir()},
		Shutdown: ShutdownOptions{GracePeriod: 30 * time.Second, Trigger: trigger},
		Eviction: EvictionOptions{Stats: stats},
	})
	require.NoError(t, err)
	t.Cleanup(a.fakeRT.Close)
	assert.Equal(t, []string{"directories", "http-listener", "kubelet-api-listener", "runtime-version", "pulled-image-records", "device-checkpoint",
		"cgroups", "first-relist", "fake-runtime",
		"container-deletor", "pleg", "podworkers", "status", "prober", "image-gc", "eviction", "node-status", "container-logs", "volumes",
		"dra-resourceslices", "plugins", "devices", "objects", "file-source", "http-source", "api-source", "fake-streaming", "resolv-conf",
		"syncloop", "http", "kubelet-api", "shutdown-trigger"}, names(a))
}

// An agent on the embedded fake runtime without a RootDir gets a fresh
// directory of its own, without mounts, and Run removes it as it returns;
// one on its own Runtime must say where its pods' data lives.
func TestRootDirOfItsOwn(t *testing.T) {
	opts := Options{Node: NodeOptions{ResolvConf: ResolvConfNone, PulledImages: PulledImagesOptions{Off: true}},
		Eviction: EvictionOptions{Stats: &evictiontest.Stats{}}}
	a, err := New(opts)
	require.NoError(t, err)
	b, err := New(opts)
	require.NoError(t, err)
	t.Cleanup(b.fakeRT.Close)
	assert.NotEqual(t, a.opts.RootDir, b.opts.RootDir, "two agents never share one")
	assert.True(t, a.opts.Security.NoMounts)
	assert.NoDirExists(t, a.opts.RootDir, "New touches no disk")

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()
	<-a.Ready()
	assert.DirExists(t, filepath.Join(a.opts.RootDir, "pods"))
	cancel()
	require.NoError(t, <-done)
	assert.NoDirExists(t, a.opts.RootDir)

	opts.Runtime = b.fakeRT
	_, err = New(opts)
	require.ErrorIs(t, err, ErrInvalidOptions)
	assert.ErrorContains(t, err, "RootDir")
}
