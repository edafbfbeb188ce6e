package devices_test

import (
	"context"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/devices"
	"github.com/kubeletkit/kubeletkit/devices/devicestest"
)

// A plugin registers two devices; a pod asking for one is admitted and
// gets it.
func Example() {
	dir, _ := os.MkdirTemp("", "devices")
	defer os.RemoveAll(dir)
	changed := make(chan struct{}, 8)
	m, _ := devices.New(devices.Options{Dir: dir, OnChange: func() { changed <- struct{}{} }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	_ = m.Listen()
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	plugin := devicestest.New("example.com/gpu", devicestest.Healthy("gpu0", "gpu1")...)
	defer plugin.Stop()
	if err := plugin.StartAndRegister(ctx, m.SocketPath()); err != nil {
		fmt.Println(err)
		return
	}
	<-changed // the devices are listed
	capacity, allocatable := m.Resources()
	gpus := capacity["example.com/gpu"]
	free := allocatable["example.com/gpu"]
	fmt.Println("capacity", gpus.String(), "allocatable", free.String())

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "train", UID: "uid-1"}, Spec: v1.PodSpec{Containers: []v1.Container{{
		Name: "trainer", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{"example.com/gpu": resource.MustParse("1")}},
	}}}}
	ok, _, _ := m.Admit(pod, nil)
	fmt.Println("admitted", ok, "devices", m.Devices(pod.UID, "trainer"))
	// Output:
	// capacity 2 allocatable 2
	// admitted true devices map[example.com/gpu:[gpu0]]
}
