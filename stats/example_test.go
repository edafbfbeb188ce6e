package stats_test

import (
	"context"
	"fmt"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/stats"
	"github.com/kubeletkit/kubeletkit/stats/statstest"
)

// A node on the fake runtime, whose containers use what usage rules say,
// and a scripted host: what kubectl top would show of them, from two
// CPU-and-memory summaries 10s apart (the node's CPU rate needs two
// samples).
func Example() {
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(start)
	rt := fake.New(fake.Options{Clock: clk, Images: []string{"nginx"}, UsageRules: []fake.UsageRule{
		{Image: "nginx", Usage: fake.Usage{NanoCores: 150_000_000, MemoryBytes: 48 << 20}},
	}})
	defer rt.Close()
	host := &statstest.Host{Clock: clk, BootTime: start.Add(-time.Hour), NanoCores: 900_000_000, MemoryCapacity: 4 << 30, MemoryWorkingSet: 1 << 30}

	sb := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"}}
	sid, _ := rt.RunPodSandbox(ctx, sb, "")
	cid, _ := rt.CreateContainer(ctx, sid, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "nginx"}, Image: &runtimeapi.ImageSpec{Image: "nginx"},
	}, sb)
	_ = rt.StartContainer(ctx, cid)

	p, err := stats.New(stats.Options{NodeName: "node-1", Runtime: rt, Host: host, Clock: clk})
	if err != nil {
		panic(err)
	}
	_, _ = p.Summary(ctx, true)
	clk.Step(10 * time.Second)
	s, err := p.Summary(ctx, true)
	if err != nil {
		panic(err)
	}
	milli := func(nanoCores *uint64) uint64 { return *nanoCores / 1_000_000 }
	fmt.Printf("node %s: cpu %dm, memory %dMi\n", s.Node.NodeName, milli(s.Node.CPU.UsageNanoCores), *s.Node.Memory.WorkingSetBytes>>20)
	for _, pod := range s.Pods {
		fmt.Printf("pod %s/%s: cpu %dm, memory %dMi\n", pod.PodRef.Namespace, pod.PodRef.Name, milli(pod.CPU.UsageNanoCores), *pod.Memory.WorkingSetBytes>>20)
		for _, c := range pod.Containers {
			fmt.Printf("  container %s: cpu %dm, memory %dMi\n", c.Name, milli(c.CPU.UsageNanoCores), *c.Memory.WorkingSetBytes>>20)
		}
	}
	// Output:
	// node node-1: cpu 900m, memory 1024Mi
	// pod default/web: cpu 150m, memory 48Mi
	//   container nginx: cpu 150m, memory 48Mi
}
