package devices_test

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/devices"
	"github.com/kubeletkit/kubeletkit/devices/devicestest"
)

// The paths every pod takes, whether it asks for devices or not: admission
// among the node's other pods and the container config hook.
func BenchmarkAdmitWithoutDevices(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			m, err := devices.New(devices.Options{Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			others := make([]*v1.Pod, n)
			for i := range others {
				others[i] = pod(fmt.Sprintf("p%d", i), nil, ctr("c", map[string]int64{"cpu": 1}))
			}
			p := pod("new", nil, ctr("c", map[string]int64{"cpu": 1, "memory": 1 << 20}))
			b.ReportAllocs()
			for b.Loop() {
				if ok, _, msg := m.Admit(p, others); !ok {
					b.Fatal(msg)
				}
			}
		})
	}
}

func BenchmarkApplyDevices(b *testing.B) {
	dir := shortTempDir(b)
	listed := make(chan struct{}, 8)
	m, err := devices.New(devices.Options{Dir: dir, OnChange: func() { listed <- struct{}{} }})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	if err := m.Listen(); err != nil {
		b.Fatal(err)
	}
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	plugin := devicestest.New(res, devicestest.Healthy("0", "1")...)
	defer plugin.Stop()
	if err := plugin.StartAndRegister(ctx, m.SocketPath()); err != nil {
		b.Fatal(err)
	}
	<-listed
	p := pod("a", nil, ctr("gpu", map[string]int64{res: 1}), ctr("plain", nil))
	if ok, _, msg := m.Admit(p, nil); !ok {
		b.Fatal(msg)
	}
	for i, name := range []string{"without devices", "with devices"} {
		c := &p.Spec.Containers[1-i]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := m.ApplyDevices(ctx, p, c, &runtimeapi.ContainerConfig{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
