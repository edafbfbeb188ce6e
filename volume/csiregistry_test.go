package volume_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kubeletkit/kubeletkit/volume"
	"github.com/kubeletkit/kubeletkit/volume/fakecsi"
)

// installer records what the registry installs on the node's objects.
type installer struct {
	mu    sync.Mutex
	calls []string
	err   error
}

func (i *installer) InstallCSIDriver(_ context.Context, d volume.CSIDriver) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.calls = append(i.calls, "install "+d.Name+" "+d.NodeID)
	return i.err
}

func (i *installer) UninstallCSIDriver(_ context.Context, name string) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.calls = append(i.calls, "uninstall "+name)
	return nil
}

func TestCSIRegistryValidate(t *testing.T) {
	r := volume.NewCSIRegistry(nil)
	for _, tc := range []struct {
		versions []string
		want     string
	}{
		{[]string{"1.0.0"}, ""},
		{[]string{"0.3.0", "v1.2.0"}, ""},
		{[]string{"0.3.0"}, `kubernetes.io/csi: ValidatePlugin for CSI driver "csi.example.com" failed. None of the versions specified ["0.3.0"] are supported. err=none of the CSI versions reported by this driver are supported`},
		{[]string{"2.0.0", "x"}, `None of the versions specified ["2.0.0" "x"] are supported`},
		{nil, "CSI driver reporting empty array for supported versions"},
	} {
		err := r.ValidatePlugin("csi.example.com", "/plugins/csi.sock", tc.versions)
		if tc.want == "" {
			assert.NoError(t, err, "%v", tc.versions)
		} else {
			assert.ErrorContains(t, err, tc.want)
		}
	}
}

// A driver registers (NodeGetInfo asked, the node's objects told), is
// found by name, and is forgotten when its socket goes; a second driver
// of the same name needs a higher version; a driver whose NodeGetInfo
// fails is not kept.
func TestCSIRegistryRegister(t *testing.T) {
	d := fakecsi.New(fakecsi.Options{Name: "csi.example.com", NodeID: "node-7"})
	sock := startDriver(t, d)
	inst := &installer{}
	r := volume.NewCSIRegistry(inst)
	ctx := context.Background()

	require.NoError(t, r.RegisterPlugin(ctx, "csi.example.com", sock, []string{"1.0.0"}))
	ep, ok := r.Lookup("csi.example.com")
	assert.True(t, ok)
	assert.Equal(t, sock, ep)
	assert.Equal(t, []volume.CSIDriver{{Name: "csi.example.com", Endpoint: sock, Version: "1.0.0", NodeID: "node-7"}}, r.Drivers())
	assert.Equal(t, []string{fakecsi.NodeGetInfo}, d.Methods())

	err := r.ValidatePlugin("csi.example.com", "/other.sock", []string{"1.0.0"})
	assert.ErrorContains(t, err, `Another driver with the same name is already registered with a higher supported version: "1.0.0"`)
	assert.NoError(t, r.ValidatePlugin("csi.example.com", "/other.sock", []string{"1.1.0"}))

	r.DeRegisterPlugin("csi.example.com", "/other.sock") // not the registered endpoint
	_, ok = r.Lookup("csi.example.com")
	assert.True(t, ok, "a deregistration of another endpoint leaves the driver")
	r.DeRegisterPlugin("csi.example.com", sock)
	_, ok = r.Lookup("csi.example.com")
	assert.False(t, ok)
	assert.Equal(t, []string{"install csi.example.com node-7", "uninstall csi.example.com"}, inst.calls)

	d.Fail(fakecsi.NodeGetInfo, status.Error(codes.Unavailable, "not ready"))
	err = r.RegisterPlugin(ctx, "csi.example.com", sock, []string{"1.0.0"})
	assert.ErrorContains(t, err, "kubernetes.io/csi: registrationHandler.RegisterPlugin failed at CSI.NodeGetInfo: rpc error: code = Unavailable desc = not ready")
	_, ok = r.Lookup("csi.example.com")
	assert.False(t, ok, "forgotten again")

	d.Fail(fakecsi.NodeGetInfo, nil)
	inst.err = errors.New("csinode: conflict")
	err = r.RegisterPlugin(ctx, "csi.example.com", sock, []string{"1.0.0"})
	assert.ErrorContains(t, err, "failed at AddNodeInfo: csinode: conflict")
	_, ok = r.Lookup("csi.example.com")
	assert.False(t, ok)
}
