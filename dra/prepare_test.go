package dra_test

import (
	"context"
	"encoding/json"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	drav1 "k8s.io/kubelet/pkg/apis/dra/v1"
	drav1beta1 "k8s.io/kubelet/pkg/apis/dra/v1beta1"

	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/dra/dratest"
	"github.com/kubeletkit/kubeletkit/podresources"
)

func device(name string, requests []string, cdi ...string) *drav1.Device {
	return &drav1.Device{PoolName: "node1", DeviceName: name, RequestNames: requests, CdiDeviceIds: cdi}
}

// second is another pod of the namespace, for which the claims are
// reserved too.
func second(p *v1.Pod) *v1.Pod {
	p = p.DeepCopy()
	p.Name, p.UID = "web-2", "pod-uid-2"
	return p
}

func sharedClaim(name string, drivers ...string) *resourcev1.ResourceClaim {
	c := claim(name, drivers...)
	c.Status.ReservedFor = append(c.Status.ReservedFor, resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: "web-2", UID: "pod-uid-2"})
	return c
}

// A pod's claims are prepared by their drivers (one call per driver with
// all of the pod's claims of it, upstream's request: namespace, UID,
// name), once, whoever else uses them; their CDI devices reach the
// containers that use them; the last pod to go unprepares them.
func TestPrepareAndUnprepare(t *testing.T) {
	gpu := startPlugin(t, "gpu.example.com", nil)
	nic := startPlugin(t, "nic.example.com", []string{drav1beta1.DRAPluginService})
	gpu.SetDevices("gpu", device("gpu-0", []string{"big"}, "gpu.example.com/gpu=0"), device("gpu-1", []string{"small"}, "gpu.example.com/gpu=1"))
	gpu.SetDevices("both", device("gpu-2", nil, "gpu.example.com/gpu=2"))
	nic.SetDevices("both", device("nic-0", nil, "nic.example.com/nic=0", "nic.example.com/vf=0"))
	m := newManager(t, "", apiClaims(sharedClaim("gpu", "gpu.example.com"), sharedClaim("both", "gpu.example.com", "nic.example.com")))
	register(t, m, gpu, nic)
	ctx := context.Background()

	pod := podWith(byName("g", "gpu"), byName("b", "both"))
	pod.Spec.Containers = []v1.Container{
		{Name: "app", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "g", Request: "small"}, {Name: "b"}}}},
		{Name: "all", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "g"}}}},
		{Name: "none"},
	}
	require.NoError(t, m.PrepareResources(ctx, pod))
	want := []dratest.Call{{Method: dratest.NodePrepareResources, Service: drav1.DRAPluginService,
		Claims: []dratest.Claim{{Namespace: "ns", UID: "gpu-uid", Name: "gpu"}, {Namespace: "ns", UID: "both-uid", Name: "both"}}}}
	assert.Equal(t, want, gpu.Calls(), "v1, the claims of the driver in one call")
	assert.Equal(t, []dratest.Call{{Method: dratest.NodePrepareResources, Service: drav1beta1.DRAPluginService,
		Claims: []dratest.Claim{{Namespace: "ns", UID: "both-uid", Name: "both"}}}}, nic.Calls(), "v1beta1 for a plugin that serves only it")

	for _, tc := range []struct {
		container int
		want      []string
	}{
		{0, []string{"gpu.example.com/gpu=1", "gpu.example.com/gpu=2", "nic.example.com/nic=0", "nic.example.com/vf=0"}},
		{1, []string{"gpu.example.com/gpu=0", "gpu.example.com/gpu=1"}},
		{2, nil},
	} {
		got, err := m.CDIDevices(pod, &pod.Spec.Containers[tc.container])
		require.NoError(t, err)
		assert.Equal(t, tc.want, got, pod.Spec.Containers[tc.container].Name)
	}

	// Prepared again (a new sandbox) or for another pod: not called again.
	require.NoError(t, m.PrepareResources(ctx, pod))
	other := second(pod)
	require.NoError(t, m.PrepareResources(ctx, other))
	assert.Len(t, gpu.Calls(), 1)

	// The first pod goes: the claims stay for the other.
	require.NoError(t, m.UnprepareResources(ctx, pod))
	assert.Len(t, gpu.Calls(), 1)
	require.NoError(t, m.UnprepareResources(ctx, pod), "again: nothing to do")
	require.NoError(t, m.UnprepareResources(ctx, other))
	assert.Equal(t, dratest.Call{Method: dratest.NodeUnprepareResources, Service: drav1.DRAPluginService,
		Claims: []dratest.Claim{{Namespace: "ns", UID: "both-uid", Name: "both"}, {Namespace: "ns", UID: "gpu-uid", Name: "gpu"}}}, gpu.Calls()[1])
	assert.Equal(t, dratest.NodeUnprepareResources, nic.Calls()[1].Method)
	assert.Empty(t, gpu.Prepared())
	assert.Empty(t, nic.Prepared())
	recorded, err := m.Recorded()
	require.NoError(t, err)
	assert.Empty(t, recorded)

	_, err = m.CDIDevices(pod, &pod.Spec.Containers[0])
	assert.EqualError(t, err, "internal error: unable to get claim info for ResourceClaim gpu in namespace ns")
}

// Upstream's errors of the calls, each failing the prepare (the pod is
// held and tried again) or the unprepare (the claim stays recorded).
func TestPrepareErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(p *dratest.Plugin)
		want  string
	}{
		{"the call fails", func(p *dratest.Plugin) { p.Fail(dratest.NodePrepareResources, errors.New("boom")) },
			"prepare dynamic resources: NodePrepareResources: rpc error: code = Unknown desc = boom"},
		{"the claim fails", func(p *dratest.Plugin) { p.FailClaim("gpu", "no such device") },
			"prepare dynamic resources: NodePrepareResources failed for ResourceClaim gpu: no such device"},
		{"the claim is skipped", func(p *dratest.Plugin) { p.OmitClaims(true) },
			"prepare dynamic resources: NodePrepareResources skipped 1 ResourceClaims"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startPlugin(t, "gpu.example.com", nil)
			m := newManager(t, "", apiClaims(claim("gpu", "gpu.example.com")))
			register(t, m, p)
			tc.setup(p)
			pod := podWith(byName("pc", "gpu"))
			ctx := context.Background()
			assert.EqualError(t, m.PrepareResources(ctx, pod), tc.want)
			// Set right, the next sync prepares it.
			p.Fail(dratest.NodePrepareResources, nil)
			p.FailClaim("gpu", "")
			p.OmitClaims(false)
			require.NoError(t, m.PrepareResources(ctx, pod))
			assert.Len(t, p.Calls(), 2)
		})
	}
}

func TestUnprepareErrors(t *testing.T) {
	p := startPlugin(t, "gpu.example.com", nil)
	m := newManager(t, "", apiClaims(claim("gpu", "gpu.example.com")))
	register(t, m, p)
	pod := podWith(byName("pc", "gpu"))
	ctx := context.Background()
	require.NoError(t, m.PrepareResources(ctx, pod))

	p.FailClaim("gpu", "busy")
	assert.EqualError(t, m.UnprepareResources(ctx, pod), "unprepare dynamic resources: NodeUnprepareResources failed for ResourceClaim gpu: busy")
	p.FailClaim("gpu", "")
	p.Fail(dratest.NodeUnprepareResources, errors.New("down"))
	assert.EqualError(t, m.UnprepareResources(ctx, pod), "unprepare dynamic resources: NodeUnprepareResources: rpc error: code = Unknown desc = down")
	p.Fail(dratest.NodeUnprepareResources, nil)
	m.Registry().DeRegisterPlugin(p.Driver(), p.Endpoint())
	assert.EqualError(t, m.UnprepareResources(ctx, pod), "unprepare dynamic resources: DRA driver gpu.example.com is not registered")
	register(t, m, p)
	require.NoError(t, m.UnprepareResources(ctx, pod))
	assert.Empty(t, p.Prepared())
}

// The claims survive a restart through the checkpoint (upstream's file,
// written by rename, 0600): the restarted Manager gives the containers
// their CDI devices and unprepares the claims when the pod goes, without
// preparing again; a pod no longer active is unprepared by
// UnprepareInactive.
func TestCheckpointSurvivesRestart(t *testing.T) {
	p := startPlugin(t, "gpu.example.com", nil)
	p.SetDevices("gpu", device("gpu-0", nil, "gpu.example.com/gpu=0"))
	state := t.TempDir()
	claims := apiClaims(claim("gpu", "gpu.example.com"))
	m := newManager(t, state, claims)
	register(t, m, p)
	ctx := context.Background()
	pod := podWith(byName("pc", "gpu"))
	pod.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "pc"}}
	require.NoError(t, m.PrepareResources(ctx, pod))

	fi, err := os.Stat(filepath.Join(state, dra.CheckpointFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	states, err := dra.ReadCheckpoint(state)
	require.NoError(t, err)
	require.Len(t, states, 1)
	assert.Equal(t, types.UID("gpu-uid"), states[0].ClaimUID)
	assert.Equal(t, []dra.Device{{PoolName: "node1", DeviceName: "gpu-0", CDIDeviceIDs: []string{"gpu.example.com/gpu=0"}}},
		states[0].DriverState["gpu.example.com"].Devices)

	// A restart.
	restarted := newManager(t, state, claims)
	register(t, restarted, p)
	got, err := restarted.CDIDevices(pod, &pod.Spec.Containers[0])
	require.NoError(t, err)
	assert.Equal(t, []string{"gpu.example.com/gpu=0"}, got)
	require.NoError(t, restarted.UnprepareResources(ctx, pod))
	assert.Equal(t, []dratest.Method{dratest.NodePrepareResources, dratest.NodeUnprepareResources}, methods(p.Calls()))
	states, err = dra.ReadCheckpoint(state)
	require.NoError(t, err)
	assert.Empty(t, states)

	// A pod prepared, then gone unseen: unprepared once found inactive,
	// left alone while active.
	require.NoError(t, restarted.PrepareResources(ctx, pod))
	require.NoError(t, restarted.UnprepareInactive(ctx, func(uid types.UID) bool { return uid == podUID }))
	assert.Len(t, p.Calls(), 3)
	require.NoError(t, restarted.UnprepareInactive(ctx, func(types.UID) bool { return false }))
	assert.Equal(t, dratest.NodeUnprepareResources, p.Calls()[3].Method)
	assert.Empty(t, p.Prepared())
}

func methods(calls []dratest.Call) []dratest.Method {
	var out []dratest.Method
	for _, c := range calls {
		out = append(out, c.Method)
	}
	return out
}

// A checkpoint whose checksum does not match its data is refused: every
// call that needs the claims fails, as upstream's kubelet does not start.
func TestCorruptCheckpoint(t *testing.T) {
	state := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(state, dra.CheckpointFile),
		[]byte(`{"Data":"{\"kind\":\"DRACheckpoint\",\"apiVersion\":\"checkpoint.dra.kubelet.k8s.io/v1\",\"Entries\":[]}","Checksum":1}`), 0o600))
	_, err := dra.ReadCheckpoint(state)
	assert.ErrorIs(t, err, dra.ErrCorruptCheckpoint)
	m := newManager(t, state, nil)
	err = m.UnprepareResources(context.Background(), podWith())
	assert.ErrorIs(t, err, dra.ErrCorruptCheckpoint)
}

// The checkpoint is upstream's format: {"Data": JSON, "Checksum": CRC32}
// with kind DRACheckpoint, version checkpoint.dra.kubelet.k8s.io/v1, the
// pods as a set.
func TestCheckpointFormat(t *testing.T) {
	p := startPlugin(t, "gpu.example.com", nil)
	p.SetDevices("gpu", device("gpu-0", []string{"big"}, "gpu.example.com/gpu=0"))
	state := t.TempDir()
	m := newManager(t, state, apiClaims(claim("gpu", "gpu.example.com")))
	register(t, m, p)
	require.NoError(t, m.PrepareResources(context.Background(), podWith(byName("pc", "gpu"))))
	b, err := os.ReadFile(filepath.Join(state, dra.CheckpointFile))
	require.NoError(t, err)
	var cp struct {
		Data     string
		Checksum uint32
	}
	require.NoError(t, json.Unmarshal(b, &cp))
	assert.Equal(t, `{"kind":"DRACheckpoint","apiVersion":"checkpoint.dra.kubelet.k8s.io/v1",`+
		`"Entries":[{"ClaimUID":"gpu-uid","ClaimName":"gpu","Namespace":"ns","PodUIDs":{"pod-uid":{}},`+
		`"DriverState":{"gpu.example.com":{"Devices":[{"PoolName":"node1","DeviceName":"gpu-0","RequestNames":["big"],"CDIDeviceIDs":["gpu.example.com/gpu=0"]}]}}}]}`, cp.Data)
	assert.Equal(t, crc32.ChecksumIEEE([]byte(cp.Data)), cp.Checksum)
}

// The scheduler's claim for DRA-backed extended resources gives a
// container the devices of the requests mapped to its non-zero extended
// resource requests.
func TestCDIDevicesOfExtendedResourceClaim(t *testing.T) {
	p := startPlugin(t, "gpu.example.com", nil)
	p.SetDevices("ext", device("gpu-0", []string{"container-0-request-0"}, "gpu.example.com/gpu=0"),
		device("gpu-1", []string{"container-1-request-0"}, "gpu.example.com/gpu=1"))
	m := newManager(t, "", apiClaims(claim("ext", "gpu.example.com")))
	register(t, m, p)
	pod := podWith()
	one := resource.MustParse("1")
	pod.Spec.Containers = []v1.Container{
		{Name: "a", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{"example.com/gpu": one}}},
		{Name: "b", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{"deviceclass.resource.kubernetes.io/gpu": one}}},
		{Name: "c"},
	}
	pod.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "ext", RequestMappings: []v1.ContainerExtendedResourceRequest{
		{ContainerName: "a", ResourceName: "example.com/gpu", RequestName: "container-0-request-0"},
		{ContainerName: "b", ResourceName: "deviceclass.resource.kubernetes.io/gpu", RequestName: "container-1-request-0"},
		{ContainerName: "c", ResourceName: "example.com/gpu", RequestName: "container-0-request-0"},
	}}
	require.NoError(t, m.PrepareResources(context.Background(), pod))
	for i, want := range [][]string{{"gpu.example.com/gpu=0"}, {"gpu.example.com/gpu=1"}, nil} {
		got, err := m.CDIDevices(pod, &pod.Spec.Containers[i])
		require.NoError(t, err)
		assert.Equal(t, want, got, pod.Spec.Containers[i].Name)
	}
}

// A claim recreated under the same name while the old one is still
// prepared is refused, as upstream's.
func TestPrepareRefusesAClaimOfAnotherUID(t *testing.T) {
	p := startPlugin(t, "gpu.example.com", nil)
	old := claim("gpu", "gpu.example.com")
	current := old
	m := newManager(t, "", dra.ClaimsFunc(func(context.Context, string, string) (*resourcev1.ResourceClaim, error) { return current, nil }))
	register(t, m, p)
	ctx := context.Background()
	require.NoError(t, m.PrepareResources(ctx, podWith(byName("pc", "gpu"))))
	current = claim("gpu", "gpu.example.com")
	current.UID = "new-uid"
	assert.EqualError(t, m.PrepareResources(ctx, podWith(byName("pc", "gpu"))),
		"prepare dynamic resources: old ResourceClaim with same name gpu and different UID gpu-uid still exists (previous pod force-deleted?!)")
}

var _ podresources.DynamicResources = (*dra.Manager)(nil)

// The pod-resources API's dynamic_resources of a container: every device
// of each claim it uses, with its CDI devices.
func TestDynamicResources(t *testing.T) {
	p := startPlugin(t, "gpu.example.com", nil)
	p.SetDevices("gpu", device("gpu-0", []string{"big"}, "gpu.example.com/gpu=0"), device("gpu-1", nil))
	m := newManager(t, "", apiClaims(claim("gpu", "gpu.example.com")))
	register(t, m, p)
	pod := podWith(byName("g", "gpu"))
	pod.Spec.Containers = []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "g", Request: "small"}}}}, {Name: "none"}}
	assert.Empty(t, m.DynamicResources(pod, &pod.Spec.Containers[0]), "not prepared yet")
	require.NoError(t, m.PrepareResources(context.Background(), pod))
	got := m.DynamicResources(pod, &pod.Spec.Containers[0])
	require.Len(t, got, 1)
	assert.Equal(t, "gpu", got[0].GetClaimName())
	assert.Equal(t, "ns", got[0].GetClaimNamespace())
	require.Len(t, got[0].GetClaimResources(), 2)
	r := got[0].GetClaimResources()[0]
	assert.Equal(t, []string{"gpu.example.com", "node1", "gpu-0", "gpu.example.com/gpu=0"},
		[]string{r.GetDriverName(), r.GetPoolName(), r.GetDeviceName(), r.GetCdiDevices()[0].GetName()})
	assert.Empty(t, got[0].GetClaimResources()[1].GetCdiDevices())
	assert.Empty(t, m.DynamicResources(pod, &pod.Spec.Containers[1]))
}
