package podresources_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	api "k8s.io/kubelet/pkg/apis/podresources/v1"
	alpha "k8s.io/kubelet/pkg/apis/podresources/v1alpha1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/podresources"
)

// shortDir is a temporary directory whose socket path fits the 108 bytes a
// unix socket's path may have.
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kkpr")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// serve runs a server until the test ends, listening before it returns,
// and dials it.
func serve(t *testing.T, opts podresources.Options) (*podresources.Server, *grpc.ClientConn) {
	t.Helper()
	s, err := podresources.New(opts)
	require.NoError(t, err)
	require.NoError(t, s.Listen())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	conn, err := grpc.NewClient("unix://"+s.SocketPath(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() {
		conn.Close()
		cancel()
		require.NoError(t, <-done)
		_, err := os.Stat(s.SocketPath())
		assert.ErrorIs(t, err, os.ErrNotExist, "the socket is removed when Run returns")
	})
	return s, conn
}

func callCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// Over the socket, with the generated clients: List, Get and
// GetAllocatableResources of v1, and v1alpha1's List.
func TestServeOverASocket(t *testing.T) {
	dir := filepath.Join(shortDir(t), podresources.DirName)
	train, done := pod("ml", "train", []string{"sidecar"}, "main"), pod("ml", "done", nil, "main")
	d := devs{
		held:        map[types.UID]map[string]map[string][]string{"train-uid": {"main": {gpu: {"gpu0"}}, "sidecar": {nic: {"nic0"}}}},
		allocatable: map[string][]string{gpu: {"gpu0", "gpu1"}, nic: {"nic0"}},
	}
	s, conn := serve(t, podresources.Options{Dir: dir, Pods: pods{active: []*v1.Pod{train}, all: []*v1.Pod{done, train}}, Sources: podresources.Sources{Devices: d}})
	assert.Equal(t, filepath.Join(dir, "kubelet.sock"), s.SocketPath())
	fi, err := os.Stat(dir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), fi.Mode().Perm(), "the socket's directory, as upstream makes it")
	fi, err = os.Stat(s.SocketPath())
	require.NoError(t, err)
	assert.Equal(t, os.ModeSocket, fi.Mode().Type())
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary name is left behind")

	ctx := callCtx(t)
	client := api.NewPodResourcesListerClient(conn)
	list, err := client.List(ctx, &api.ListPodResourcesRequest{})
	require.NoError(t, err)
	require.Len(t, list.GetPodResources(), 1, "the active pods only")
	want := podresources.PodResources(train, podresources.Sources{Devices: d})
	assert.Equal(t, want.String(), list.GetPodResources()[0].String())

	got, err := client.Get(ctx, &api.GetPodResourcesRequest{PodNamespace: "ml", PodName: "train"})
	require.NoError(t, err)
	assert.Equal(t, want.String(), got.GetPodResources().String())
	_, err = client.Get(ctx, &api.GetPodResourcesRequest{PodNamespace: "ml", PodName: "done"})
	assert.Equal(t, codes.Unknown, status.Code(err))
	assert.Equal(t, "pod done in namespace ml not found", status.Convert(err).Message())

	alloc, err := client.GetAllocatableResources(ctx, &api.AllocatableResourcesRequest{})
	require.NoError(t, err)
	assert.Len(t, alloc.GetDevices(), 3)
	assert.Empty(t, alloc.GetCpuIds(), "no CPU manager: policy none")
	assert.Empty(t, alloc.GetMemory(), "no memory manager: policy None")

	alist, err := alpha.NewPodResourcesListerClient(conn).List(ctx, &alpha.ListPodResourcesRequest{})
	require.NoError(t, err)
	var names []string
	for _, p := range alist.GetPodResources() {
		names = append(names, p.GetName())
	}
	assert.Equal(t, []string{"done", "train"}, names, "v1alpha1 lists every pod the node holds")
}

// Calls over the rate limit are refused with upstream's error, whatever
// the method, until the clock refills the bucket.
func TestServeRateLimited(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	_, conn := serve(t, podresources.Options{Dir: shortDir(t), Pods: pods{}, Clock: clk})
	ctx := callCtx(t)
	client := api.NewPodResourcesListerClient(conn)
	for i := range podresources.DefaultBurst {
		_, err := client.List(ctx, &api.ListPodResourcesRequest{})
		require.NoError(t, err, "call %d", i)
	}
	_, err := client.GetAllocatableResources(ctx, &api.AllocatableResourcesRequest{})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Equal(t, "rejected by rate limit", status.Convert(err).Message())
	_, err = alpha.NewPodResourcesListerClient(conn).List(ctx, &alpha.ListPodResourcesRequest{})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))

	clk.SetTime(clk.Now().Add(10 * time.Millisecond))
	_, err = client.List(ctx, &api.ListPodResourcesRequest{})
	assert.NoError(t, err, "one token back after 10ms")
	_, err = client.List(ctx, &api.ListPodResourcesRequest{})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
}

// A socket left by an earlier run (or anything at its path) is replaced.
func TestListenReplacesAStaleSocket(t *testing.T) {
	dir := shortDir(t)
	stale := filepath.Join(dir, podresources.SocketName)
	require.NoError(t, os.WriteFile(stale, []byte("stale"), 0o600))
	_, conn := serve(t, podresources.Options{Dir: dir, Pods: pods{}})
	_, err := api.NewPodResourcesListerClient(conn).List(callCtx(t), &api.ListPodResourcesRequest{})
	assert.NoError(t, err)
}

func TestListenRefusals(t *testing.T) {
	s, err := podresources.New(podresources.Options{Pods: pods{}})
	require.NoError(t, err)
	assert.ErrorIs(t, s.Listen(), podresources.ErrInvalidOptions, "no Dir")
	long := filepath.Join(shortDir(t), strings.Repeat("d", 60), strings.Repeat("e", 60))
	s, err = podresources.New(podresources.Options{Dir: long, Pods: pods{}})
	require.NoError(t, err)
	assert.ErrorContains(t, s.Listen(), "longer than the 107 bytes")
}

// Run ends with its context even when the server was never listened on
// before, and returns no error.
func TestRunListensItself(t *testing.T) {
	s, err := podresources.New(podresources.Options{Dir: shortDir(t), Pods: pods{}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, s.Run(ctx))
	assert.Error(t, s.Run(ctx), "Run may be called once")
}

// countingMetrics records the calls Metrics.Request is told of.
type countingMetrics struct {
	mu    sync.Mutex
	calls []string
}

func (m *countingMetrics) Request(version, method string, failed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, fmt.Sprintf("%s %s failed=%t", version, method, failed))
}

func (m *countingMetrics) got() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

// Every call answered on the socket is counted by version and method, a
// failed one as failed (upstream's kubelet_pod_resources_endpoint_*); one
// the rate limit rejected is not.
func TestServeCountsRequests(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	m := &countingMetrics{}
	_, conn := serve(t, podresources.Options{Dir: shortDir(t), Pods: pods{}, Clock: clk, Burst: 4, Metrics: m})
	ctx := callCtx(t)
	client := api.NewPodResourcesListerClient(conn)
	_, err := client.List(ctx, &api.ListPodResourcesRequest{})
	require.NoError(t, err)
	_, err = client.GetAllocatableResources(ctx, &api.AllocatableResourcesRequest{})
	require.NoError(t, err)
	_, err = client.Get(ctx, &api.GetPodResourcesRequest{PodNamespace: "ns", PodName: "gone"})
	require.Error(t, err)
	_, err = alpha.NewPodResourcesListerClient(conn).List(ctx, &alpha.ListPodResourcesRequest{})
	require.NoError(t, err)
	_, err = client.List(ctx, &api.ListPodResourcesRequest{})
	require.Equal(t, codes.ResourceExhausted, status.Code(err), "over the burst")
	assert.Equal(t, []string{
		"v1 List failed=false",
		"v1 GetAllocatableResources failed=false",
		"v1 Get failed=true",
		"v1alpha1 List failed=false",
	}, m.got())
}
