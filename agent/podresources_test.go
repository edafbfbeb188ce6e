package agent_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	api "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/devices"
	"github.com/kubeletkit/kubeletkit/devices/devicestest"
)

// waitListed polls the pod-resources API's List until cond holds for what
// it answers, and returns that answer.
func waitListed(t *testing.T, client api.PodResourcesListerClient, what string, cond func([]*api.PodResources) bool) []*api.PodResources {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var last []*api.PodResources
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		list, err := client.List(ctx, &api.ListPodResourcesRequest{})
		cancel()
		require.NoError(t, err)
		if last = list.GetPodResources(); cond(last) {
			return last
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for an event
	}
	t.Fatalf("pod-resources List: %s did not happen; last answer: %v", what, last)
	return nil
}

// A monitoring agent reads the pod-resources socket under the root
// directory: a running pod that got a device plugin's device is listed
// with that device's ID, Get answers it, and once the pod is deleted it is
// neither listed nor found. The socket goes when the agent stops.
func TestPodResourcesAPI(t *testing.T) {
	dir := t.TempDir()
	manifests, root, plugins := filepath.Join(dir, "manifests"), filepath.Join(dir, "root"), devicePluginDir(t)
	require.NoError(t, os.Mkdir(manifests, 0o750))
	rt := agent.NewFakeRuntime(nil, nil)
	t.Cleanup(rt.Close)
	n := startNodeWith(t, agent.Options{Runtime: rt, RootDir: root, Sources: agent.SourceOptions{ManifestPath: manifests},
		Node: agent.NodeOptions{DevicePluginDir: plugins}, HTTP: agent.HTTPOptions{PodResources: true}})
	socket := filepath.Join(root, "pod-resources", "kubelet.sock")
	fi, err := os.Stat(socket)
	require.NoError(t, err, "upstream's socket, there once the agent is Ready")
	assert.Equal(t, os.ModeSocket, fi.Mode().Type())

	plugin := devicestest.New("example.com/gpu", devicestest.Healthy("gpu0", "gpu1")...)
	t.Cleanup(plugin.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, plugin.StartAndRegister(ctx, filepath.Join(plugins, devices.SocketName)))
	n.waitResource("example.com/gpu", 2, 2)

	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer conn.Close()
	client := api.NewPodResourcesListerClient(conn)
	alloc, err := client.GetAllocatableResources(ctx, &api.AllocatableResourcesRequest{})
	require.NoError(t, err)
	assert.Equal(t, []string{"example.com/gpu/gpu0", "example.com/gpu/gpu1"}, deviceNames(alloc.GetDevices()))
	assert.Empty(t, alloc.GetCpuIds(), "no CPU manager: upstream's policy none")

	n.write("a.yaml", strings.ReplaceAll(gpuPod, "NAME", "a"))
	n.waitPod("a-node1", "Running", isRunning)
	given := createdEnv(t, rt, "a-uid")[devicestest.DefaultEnv]
	require.Contains(t, []string{"gpu0", "gpu1"}, given)
	want := []string{"example.com/gpu/" + given}

	list := waitListed(t, client, "a-node1 listed", func(l []*api.PodResources) bool { return len(l) == 1 })
	assert.Equal(t, "default", list[0].GetNamespace())
	assert.Equal(t, "a-node1", list[0].GetName())
	require.Len(t, list[0].GetContainers(), 1)
	assert.Equal(t, "train", list[0].GetContainers()[0].GetName())
	assert.Equal(t, want, deviceNames(list[0].GetContainers()[0].GetDevices()), "the device the container got")

	got, err := client.Get(ctx, &api.GetPodResourcesRequest{PodNamespace: "default", PodName: "a-node1"})
	require.NoError(t, err)
	assert.Equal(t, want, deviceNames(got.GetPodResources().GetContainers()[0].GetDevices()))
	inProcess, err := n.a.PodResources().Get(ctx, &api.GetPodResourcesRequest{PodNamespace: "default", PodName: "a-node1"})
	require.NoError(t, err)
	assert.Equal(t, got.String(), inProcess.String(), "the same answer in process")

	require.NoError(t, os.Remove(filepath.Join(manifests, "a.yaml")))
	waitListed(t, client, "a-node1 gone", func(l []*api.PodResources) bool { return len(l) == 0 })
	_, err = client.Get(ctx, &api.GetPodResourcesRequest{PodNamespace: "default", PodName: "a-node1"})
	assert.Equal(t, codes.Unknown, status.Code(err))
	assert.Equal(t, "pod a-node1 in namespace default not found", status.Convert(err).Message())

	n.stop()
	_, err = os.Stat(socket)
	assert.ErrorIs(t, err, os.ErrNotExist, "removed when the agent stops")
}

// deviceNames are the API's device entries as resource/ID.
func deviceNames(devs []*api.ContainerDevices) []string {
	var out []string
	for _, d := range devs {
		for _, id := range d.GetDeviceIds() {
			out = append(out, d.GetResourceName()+"/"+id)
		}
	}
	return out
}

// Without HTTP.PodResources there is no socket; the API still answers in
// process.
func TestPodResourcesOff(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	n := startNodeWith(t, agent.Options{RootDir: root})
	_, err := os.Stat(filepath.Join(root, "pod-resources"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	list, err := n.a.PodResources().List(context.Background(), &api.ListPodResourcesRequest{})
	require.NoError(t, err)
	assert.Empty(t, list.GetPodResources())
}
