package agenttest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
)

// Image pulls are serialised by default, as upstream's
// serializeImagePulls: six pods whose images take 10s each to pull start
// one every 10s; Node.MaxParallelImagePulls lets more run at once.
func TestImagePullsSerialisedByDefault(t *testing.T) {
	for _, tc := range []struct {
		name     string
		parallel int32
		// running after 15s, 35s and 65s
		want [3]int
	}{
		{"serialised by default", 0, [3]int{1, 3, 6}},
		{"three at once", 3, [3]int{3, 6, 6}},
		{"no bound", -1, [3]int{6, 6, 6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Node: agent.NodeOptions{MaxParallelImagePulls: tc.parallel}}})
				for i := range 6 {
					image := fmt.Sprintf("registry.example/slow-%d:1", i)
					n.Runtime().SetPullBehavior(image, fake.PullBehavior{Latency: 10 * time.Second})
					n.AddPod(pod(fmt.Sprintf("slow-%d", i), v1.Container{Name: "app", Image: image}))
				}
				running := func() int {
					r := 0
					for _, p := range n.Pods() {
						if p.Status.Phase == v1.PodRunning {
							r++
						}
					}
					return r
				}
				var got [3]int
				n.Step(15 * time.Second)
				got[0] = running()
				n.Step(20 * time.Second)
				got[1] = running()
				n.Step(30 * time.Second)
				got[2] = running()
				assert.Equal(t, tc.want, got)
			})
		})
	}
}

// Node.MaxPods is the pods capacity the node reports and admits against,
// whatever its machine says: the third pod on a node of two is refused as
// upstream refuses it.
func TestMaxPods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Node: agent.NodeOptions{MaxPods: 2}}})
		for i := range 3 {
			n.AddPod(pod(fmt.Sprintf("app-%d", i), v1.Container{Name: "app", Image: "busybox:1.36"}))
			n.Step(time.Second)
		}
		n.Step(10 * time.Second)
		st, ok := n.Agent().NodeStatus()
		if assert.True(t, ok) {
			pods := st.Capacity[v1.ResourcePods]
			assert.Equal(t, int64(2), pods.Value())
			pods = st.Allocatable[v1.ResourcePods]
			assert.Equal(t, int64(2), pods.Value())
		}
		for i, want := range []v1.PodPhase{v1.PodRunning, v1.PodRunning, v1.PodFailed} {
			assert.Equal(t, want, n.Pod("default", fmt.Sprintf("app-%d", i)).Status.Phase, i)
		}
		third := n.Pod("default", "app-2")
		assert.Equal(t, "OutOfpods", third.Status.Reason)
		assert.Equal(t, "Pod was rejected: Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2", third.Status.Message)
	})
}

// The node's own credentials (Node.ImageCredentials: credential provider
// plugins) are tried after a pod's pull secrets.
func TestImageCredentialsOfTheNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		creds := podsync.CredentialsFunc(func(_ context.Context, pod *v1.Pod, image string) []*runtimeapi.AuthConfig {
			// The pod the image is pulled for comes with it.
			if strings.HasPrefix(image, "private.registry.example/") && pod.Name == "private" {
				return []*runtimeapi.AuthConfig{{Username: "node", Password: "from-a-plugin"}}
			}
			return nil
		})
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{Node: agent.NodeOptions{ImageCredentials: creds}}})
		n.AddPod(pod("private", v1.Container{Name: "app", Image: "private.registry.example/team/app:1"}))
		n.AddPod(pod("public", v1.Container{Name: "app", Image: "busybox:1.36"}))
		n.Step(10 * time.Second)
		auths := map[string]*runtimeapi.AuthConfig{}
		for _, c := range n.Runtime().CallsOf(fake.PullImage) {
			req := c.Request.(*runtimeapi.PullImageRequest)
			auths[req.GetImage().GetImage()] = req.GetAuth()
		}
		if assert.Contains(t, auths, "private.registry.example/team/app:1") {
			assert.Equal(t, "node", auths["private.registry.example/team/app:1"].GetUsername())
			assert.Equal(t, "from-a-plugin", auths["private.registry.example/team/app:1"].GetPassword())
		}
		assert.Contains(t, auths, "busybox:1.36")
		assert.Nil(t, auths["busybox:1.36"], "no credentials for an image the node has none for")
	})
}
