package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	kkconfig "github.com/kubeletkit/kubeletkit/kubeletconfig"
)

// The cgroup flags: upstream's defaults on a real runtime (which needs
// root), none on a fake runtime (the embedded one; over a socket unless
// asked), and /configz says which; --pod-max-pids reaches the agent, and
// /configz shows it where there are pod cgroups to limit.
func TestCgroupFlags(t *testing.T) {
	root := os.Geteuid() == 0
	socket := []string{"--container-runtime-endpoint", "unix:///x.sock"}
	for _, tc := range []struct {
		name      string
		args      []string
		runtime   string // the runtime's name from its CRI Version
		qos       bool
		enforce   []string
		wantErr   bool
		reportNon bool // configz enforcement "none"
		warned    bool // a line says why the pods get no cgroups
		pids      int64
	}{
		{name: "fake runtime", args: nil, qos: false, reportNon: true, pids: -1},
		{name: "real runtime", args: socket, runtime: "containerd", qos: root, enforce: []string{"pods"}, wantErr: !root, pids: -1},
		{name: "pids limit", args: append(socket, "--pod-max-pids", "4096"), runtime: "containerd", qos: root, enforce: []string{"pods"}, wantErr: !root, pids: 4096},
		{name: "pids limit off", args: append(socket, "--pod-max-pids", "0"), runtime: "containerd", qos: root, enforce: []string{"pods"}, wantErr: !root},
		{name: "off", args: append(socket, "--cgroups-per-qos=false"), runtime: "containerd", reportNon: true, pids: -1},
		{name: "off, with a pids limit", args: append(socket, "--cgroups-per-qos=false", "--pod-max-pids", "4096"), runtime: "containerd", reportNon: true, pids: 4096},
		{name: "none", args: append(socket, "--enforce-node-allocatable", ""), runtime: "containerd", qos: root, wantErr: !root, reportNon: true, pids: -1},
		{name: "fake runtime over a socket", args: socket, runtime: fake.DefaultRuntimeName, reportNon: true, warned: true, pids: -1},
		{name: "fake runtime over a socket, asked", args: append(socket, "--cgroups-per-qos"), runtime: fake.DefaultRuntimeName,
			qos: root, enforce: []string{"pods"}, wantErr: !root, pids: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := parseFlags(tc.args, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			c.runtimeName = tc.runtime
			var logs bytes.Buffer
			cfg, err := kkconfig.Convert(c.kc)
			require.NoError(t, err)
			opts := cfg.Agent
			opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
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
			if opts.Cgroups.PerQOS != tc.qos || !slices.Equal(opts.Cgroups.EnforceNodeAllocatable, tc.enforce) || opts.Cgroups.PodPidsLimit != tc.pids {
				t.Fatalf("Cgroups.PerQOS %v, Cgroups.EnforceNodeAllocatable %q, Cgroups.PodPidsLimit %d; want %v, %q, %d",
					opts.Cgroups.PerQOS, opts.Cgroups.EnforceNodeAllocatable, opts.Cgroups.PodPidsLimit, tc.qos, tc.enforce, tc.pids)
			}
			if warned := strings.Contains(logs.String(), "the pods get no cgroups"); warned != tc.warned {
				t.Errorf("logged %q, want the fake runtime's line %v", logs.String(), tc.warned)
			}
			kc := &kubeletconfig.KubeletConfiguration{}
			cgroupSettings(kc, &opts)
			if *kc.CgroupsPerQOS != tc.qos || (tc.reportNon != slices.Equal(kc.EnforceNodeAllocatable, []string{"none"})) {
				t.Errorf("configz: cgroupsPerQOS %v, enforceNodeAllocatable %q", *kc.CgroupsPerQOS, kc.EnforceNodeAllocatable)
			}
			if tc.qos && (kc.CgroupDriver != "cgroupfs" || kc.CgroupRoot != "/") {
				t.Errorf("configz: driver %q, root %q", kc.CgroupDriver, kc.CgroupRoot)
			}
			want := int64(-1) // no pod cgroup limited
			if tc.qos && tc.pids > 0 {
				want = tc.pids
			}
			if *kc.PodPidsLimit != want {
				t.Errorf("configz: podPidsLimit %d, want %d", *kc.PodPidsLimit, want)
			}
		})
	}
}

// On kubeletkit's fake runtime over a socket (as examples/fakecri serves
// it), minikubelet with the default flags runs its pods without cgroups,
// as root or not, and says why. The cgroup root given does not exist: had
// the pods got cgroups, the node would not have started, and nothing of the
// host's cgroups is touched either way.
func TestCgroupsOffOnFakeSocket(t *testing.T) {
	dir := t.TempDir()
	_, sock := serveFake(t, dir)
	var out, logs syncBuffer
	err := run(context.Background(), []string{"--runonce", "--container-runtime-endpoint", "unix://" + sock, "--node-name", "edge1",
		"--root-dir", filepath.Join(dir, "root"), "--pod-manifest-path", webManifests(t, dir), "--eviction-hard", "",
		"--cgroup-root", "/kk-test-absent-cgroup-root"}, &out, &logs)
	require.NoError(t, err, logs.String())
	var list v1.PodList
	require.NoError(t, json.Unmarshal([]byte(out.String()), &list), out.String())
	require.Len(t, list.Items, 1)
	assert.Equal(t, v1.PodRunning, list.Items[0].Status.Phase)
	assert.Contains(t, logs.String(), "the pods get no cgroups")
	assert.NoDirExists(t, filepath.Join(dir, "root", "cgroups"), "no pod cgroup was recorded")
}

// serveFake serves a fake runtime on a socket in dir, as examples/fakecri
// does, until the test ends, and returns it and the socket's path.
func serveFake(t *testing.T, dir string) (*fake.Runtime, string) {
	t.Helper()
	sock := filepath.Join(dir, "cri.sock")
	lis, err := net.Listen("unix", sock)
	require.NoError(t, err)
	rt := fake.New(fake.Options{})
	srv, err := cri.NewServer(rt, rt, cri.ServerOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lis) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-served) })
	return rt, sock
}
