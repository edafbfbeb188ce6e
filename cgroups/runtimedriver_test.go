package cgroups_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cgroups"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

func linuxConfig(d runtimeapi.CgroupDriver) *runtimeapi.RuntimeConfigResponse {
	return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: d}}
}

// TestDriverFromRuntime: upstream's decision at start
// (KubeletCgroupDriverFromCRI): the runtime's driver wins; the configured
// one stays when the runtime does not implement RuntimeConfig or names no
// Linux configuration.
func TestDriverFromRuntime(t *testing.T) {
	unavailable := fmt.Errorf("dial: %w", cri.ErrUnavailable)
	for _, tc := range []struct {
		name       string
		configured cgroups.Driver
		resp       *runtimeapi.RuntimeConfigResponse
		err        error
		want       cgroups.Driver
		wantSource cgroups.DriverSource
		wantErr    error
	}{
		{"runtime's systemd over configured cgroupfs", cgroups.DriverCgroupfs, linuxConfig(runtimeapi.CgroupDriver_SYSTEMD), nil,
			cgroups.DriverSystemd, cgroups.DriverFromRuntimeConfig, nil},
		{"runtime's cgroupfs over configured systemd", cgroups.DriverSystemd, linuxConfig(runtimeapi.CgroupDriver_CGROUPFS), nil,
			cgroups.DriverCgroupfs, cgroups.DriverFromRuntimeConfig, nil},
		{"unimplemented (containerd 1.6): configured", cgroups.DriverSystemd, nil, &cri.Error{Method: "RuntimeConfig", Code: codes.Unimplemented},
			cgroups.DriverSystemd, cgroups.DriverConfiguredUnimplemented, nil},
		{"unimplemented as a gRPC status", cgroups.DriverSystemd, nil, status.Error(codes.Unimplemented, "unknown method RuntimeConfig"),
			cgroups.DriverSystemd, cgroups.DriverConfiguredUnimplemented, nil},
		{"unimplemented sentinel (a runtime without the capability)", cgroups.DriverCgroupfs, nil, fmt.Errorf("runtime config: %w", cri.ErrUnimplemented),
			cgroups.DriverCgroupfs, cgroups.DriverConfiguredUnimplemented, nil},
		{"no linux configuration: configured", cgroups.DriverSystemd, &runtimeapi.RuntimeConfigResponse{}, nil,
			cgroups.DriverSystemd, cgroups.DriverConfiguredNoLinux, nil},
		{"unknown driver", cgroups.DriverCgroupfs, linuxConfig(runtimeapi.CgroupDriver(7)), nil,
			cgroups.DriverCgroupfs, cgroups.DriverFromRuntimeConfig, cgroups.ErrUnknownRuntimeDriver},
		{"other error: returned", cgroups.DriverCgroupfs, nil, unavailable,
			cgroups.DriverCgroupfs, cgroups.DriverConfiguredUnimplemented, cri.ErrUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, src, err := cgroups.DriverFromRuntime(tc.configured, tc.resp, tc.err)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				if tc.wantErr == cgroups.ErrUnknownRuntimeDriver && err.Error() != "runtime returned an unknown cgroup driver 7" {
					t.Errorf("message %q, want upstream's", err)
				}
				return
			}
			if d != tc.want || src != tc.wantSource {
				t.Errorf("got %q (source %d), want %q (source %d)", d, src, tc.want, tc.wantSource)
			}
		})
	}
}

// scriptedRuntime answers RuntimeConfig with its answers in turn (the last
// one again once they run out), and counts the calls.
type scriptedRuntime struct {
	mu      sync.Mutex
	answers []func() (*runtimeapi.RuntimeConfigResponse, error)
	calls   int
}

func (r *scriptedRuntime) RuntimeConfig(context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.answers[min(r.calls, len(r.answers)-1)]
	r.calls++
	return a()
}

// TestRuntimeDriver: as upstream's kubelet at start, three calls two
// seconds apart while the runtime fails (still starting), at once on
// Unimplemented or an unknown driver.
func TestRuntimeDriver(t *testing.T) {
	fail := func() (*runtimeapi.RuntimeConfigResponse, error) {
		return nil, fmt.Errorf("connect: %w", cri.ErrUnavailable)
	}
	systemd := func() (*runtimeapi.RuntimeConfigResponse, error) {
		return linuxConfig(runtimeapi.CgroupDriver_SYSTEMD), nil
	}
	unimplemented := func() (*runtimeapi.RuntimeConfigResponse, error) { return nil, cri.ErrUnimplemented }
	unknown := func() (*runtimeapi.RuntimeConfigResponse, error) { return linuxConfig(runtimeapi.CgroupDriver(9)), nil }
	for _, tc := range []struct {
		name      string
		answers   []func() (*runtimeapi.RuntimeConfigResponse, error)
		want      cgroups.Driver
		wantErr   error
		wantCalls int
		wantWait  time.Duration
	}{
		{"answers", []func() (*runtimeapi.RuntimeConfigResponse, error){systemd}, cgroups.DriverSystemd, nil, 1, 0},
		{"starting, then answers", []func() (*runtimeapi.RuntimeConfigResponse, error){fail, fail, systemd}, cgroups.DriverSystemd, nil, 3, 4 * time.Second},
		{"never answers", []func() (*runtimeapi.RuntimeConfigResponse, error){fail}, "", cri.ErrUnavailable, 3, 4 * time.Second},
		{"unimplemented: configured at once", []func() (*runtimeapi.RuntimeConfigResponse, error){unimplemented}, cgroups.DriverCgroupfs, nil, 1, 0},
		{"unknown driver: no second call", []func() (*runtimeapi.RuntimeConfigResponse, error){unknown}, "", cgroups.ErrUnknownRuntimeDriver, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := &scriptedRuntime{answers: tc.answers}
				start := time.Now()
				d, err := cgroups.RuntimeDriver(t.Context(), rt, cgroups.DriverCgroupfs, clock.RealClock{}, nil)
				if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if err == nil && d != tc.want {
					t.Errorf("driver %q, want %q", d, tc.want)
				}
				if rt.calls != tc.wantCalls {
					t.Errorf("%d calls, want %d", rt.calls, tc.wantCalls)
				}
				if waited := time.Since(start); waited != tc.wantWait {
					t.Errorf("waited %v, want %v", waited, tc.wantWait)
				}
			})
		})
	}
}

// TestRuntimeDriverOverCRI asks the fake runtime through cri.Client and
// cri.Server, as a kubelet asks containerd: its SYSTEMD answer, and
// Unimplemented as containerd 1.6 answers, which leaves the configured
// driver.
func TestRuntimeDriverOverCRI(t *testing.T) {
	for _, tc := range []struct {
		name          string
		unimplemented bool
		want          cgroups.Driver
	}{
		{"containerd 2.x: the runtime's", false, cgroups.DriverSystemd},
		{"containerd 1.6: unimplemented, the configured", true, cgroups.DriverCgroupfs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := fake.New(fake.Options{})
			defer rt.Close()
			rt.SetCgroupDriver(runtimeapi.CgroupDriver_SYSTEMD)
			if tc.unimplemented {
				rt.InjectFault(fake.RuntimeConfig, fake.Fault{Err: cri.ErrUnimplemented})
			}
			c := serveCRI(t, rt)
			d, err := cgroups.RuntimeDriver(t.Context(), c, cgroups.DriverCgroupfs, clock.RealClock{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if d != tc.want {
				t.Errorf("driver %q, want %q", d, tc.want)
			}
			if n := len(rt.CallsOf(fake.RuntimeConfig)); n != 1 {
				t.Errorf("%d RuntimeConfig calls, want 1", n)
			}
		})
	}
}

// serveCRI serves rt on a socket of the test's and dials it.
func serveCRI(t *testing.T, rt *fake.Runtime) *cri.Client {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cri.sock")
	srv, err := cri.NewServer(rt, rt, cri.ServerOptions{ShutdownTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	lis, err := cri.Listen("unix://" + path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, lis) }()
	c, err := cri.Dial(context.Background(), path, cri.DialOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Close()
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return c
}

// TestManagerAsksRuntime: with Options.Runtime, Start takes the runtime's
// driver over Options.Driver, and the pods' cgroup parents are spelled as
// the runtime's driver spells them.
func TestManagerAsksRuntime(t *testing.T) {
	for _, tc := range []struct {
		name       string
		configured cgroups.Driver
		answer     *runtimeapi.RuntimeConfigResponse
		answerErr  error
		want       cgroups.Driver
		wantParent string
	}{
		{"runtime's systemd", cgroups.DriverCgroupfs, linuxConfig(runtimeapi.CgroupDriver_SYSTEMD), nil,
			cgroups.DriverSystemd, "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu1.slice"},
		{"runtime's cgroupfs", cgroups.DriverSystemd, linuxConfig(runtimeapi.CgroupDriver_CGROUPFS), nil,
			cgroups.DriverCgroupfs, "/kubepods/besteffort/podu1"},
		{"unimplemented: configured", cgroups.DriverSystemd, nil, cri.ErrUnimplemented,
			cgroups.DriverSystemd, "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu1.slice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := &scriptedRuntime{answers: []func() (*runtimeapi.RuntimeConfigResponse, error){
				func() (*runtimeapi.RuntimeConfigResponse, error) { return tc.answer, tc.answerErr }}}
			m, _ := newManager(t, fakeV2(t), cgroups.Options{Driver: tc.configured, Runtime: rt, Systemd: newFakeSystemd(250),
				StateDir: t.TempDir()})
			if err := m.Start(context.Background(), node); err != nil {
				t.Fatal(err)
			}
			if m.Driver() != tc.want {
				t.Errorf("driver %q, want %q", m.Driver(), tc.want)
			}
			parent, err := m.CgroupParent(pod("u1", "")) // BestEffort
			if err != nil {
				t.Fatal(err)
			}
			if parent != tc.wantParent {
				t.Errorf("cgroup parent %q, want %q", parent, tc.wantParent)
			}
		})
	}
}
