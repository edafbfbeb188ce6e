package fake_test

import (
	"context"
	"fmt"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri/fake"
)

var benchSizes = []int{100, 1000, 10000}

// benchNode returns a runtime holding n containers, two per pod (an app and
// a sidecar, as a kubelet would label them), half of them running, and the
// ID of one sandbox.
func benchNode(b *testing.B, n int) (*fake.Runtime, string) {
	b.Helper()
	ctx := context.Background()
	rt := fake.New(fake.Options{Clock: clocktesting.NewFakeClock(t0), Images: []string{"busybox"}, CallHistory: -1})
	b.Cleanup(rt.Close)
	var sandboxID string
	for p := range n / 2 {
		cfg := podConfig(fmt.Sprint("pod-", p))
		cfg.Labels["io.kubernetes.pod.namespace"] = "default"
		cfg.Labels["io.kubernetes.pod.uid"] = cfg.Metadata.Uid
		sb, err := rt.RunPodSandbox(ctx, cfg, "")
		if err != nil {
			b.Fatal(err)
		}
		sandboxID = sb
		for i, name := range []string{"app", "sidecar"} {
			c := containerConfig(name, "busybox")
			c.Labels["io.kubernetes.pod.uid"] = cfg.Metadata.Uid
			c.Annotations = map[string]string{"io.kubernetes.container.hash": "1234abcd", "io.kubernetes.container.restartCount": "0"}
			id, err := rt.CreateContainer(ctx, sb, c, cfg)
			if err != nil {
				b.Fatal(err)
			}
			if i == 0 {
				if err := rt.StartContainer(ctx, id); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	return rt, sandboxID
}

// benchList runs list on nodes of each size and checks how many objects it
// returned.
func benchList(b *testing.B, list func(rt *fake.Runtime, sandboxID string) (int, error), want func(n int) int) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("containers=%d", n), func(b *testing.B) {
			rt, sb := benchNode(b, n)
			b.ReportAllocs()
			for b.Loop() {
				if got, err := list(rt, sb); err != nil || got != want(n) {
					b.Fatal(got, err)
				}
			}
		})
	}
}

func BenchmarkListContainers(b *testing.B) {
	benchList(b, func(rt *fake.Runtime, _ string) (int, error) {
		l, err := rt.ListContainers(context.Background(), nil)
		return len(l), err
	}, func(n int) int { return n })
}

// BenchmarkListContainersRunning is the relist's filtered call: the running
// containers, a state filter that still looks at every container.
func BenchmarkListContainersRunning(b *testing.B) {
	running := &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}}
	benchList(b, func(rt *fake.Runtime, _ string) (int, error) {
		l, err := rt.ListContainers(context.Background(), running)
		return len(l), err
	}, func(n int) int { return n / 2 })
}

// BenchmarkListContainersOfSandbox filters by sandbox, which the fake
// answers from the sandbox's own containers: constant in the node's size.
func BenchmarkListContainersOfSandbox(b *testing.B) {
	benchList(b, func(rt *fake.Runtime, sb string) (int, error) {
		l, err := rt.ListContainers(context.Background(), &runtimeapi.ContainerFilter{PodSandboxId: sb})
		return len(l), err
	}, func(int) int { return 2 })
}

// BenchmarkListPodSandbox lists the n/2 sandboxes of a node with n
// containers.
func BenchmarkListPodSandbox(b *testing.B) {
	benchList(b, func(rt *fake.Runtime, _ string) (int, error) {
		l, err := rt.ListPodSandbox(context.Background(), nil)
		return len(l), err
	}, func(n int) int { return n / 2 })
}
