package agenttest_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	api "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// The pod-resources API, in process (Agent.PodResources), lists the active
// pods only, as upstream's with KubeletPodResourcesListUseActivePods: a pod
// that completed is still on the node but no longer listed, and Get
// answers it as not found. A pod's sidecar is reported before its
// container, its regular init container not at all.
func TestPodResourcesListsActivePods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{Rules: []fake.Rule{
			{Command: []string{"true"}, Behavior: fake.Behavior{Outcome: fake.Exit}}}})
		always := v1.ContainerRestartPolicyAlways
		web := pod("web", container("app", "sleep", "3600"))
		side := container("proxy", "sleep", "3600")
		side.RestartPolicy = &always
		web.Spec.InitContainers = []v1.Container{container("setup", "true"), side}
		job := pod("job", container("once", "true"))
		job.Spec.RestartPolicy = v1.RestartPolicyNever
		n.AddPod(web)
		n.AddPod(job)
		require.True(t, n.StepUntil(time.Minute, func() bool {
			return n.Pod("default", "job").Status.Phase == v1.PodSucceeded && n.Pod("default", "web").Status.Phase == v1.PodRunning
		}))

		pr := n.Agent().PodResources()
		ctx := context.Background()
		list, err := pr.List(ctx, &api.ListPodResourcesRequest{})
		require.NoError(t, err)
		require.Len(t, list.GetPodResources(), 1, "the completed pod is not active")
		var names []string
		for _, c := range list.GetPodResources()[0].GetContainers() {
			names = append(names, c.GetName())
		}
		assert.Equal(t, "web", list.GetPodResources()[0].GetName())
		assert.Equal(t, []string{"proxy", "app"}, names)

		_, err = pr.Get(ctx, &api.GetPodResourcesRequest{PodNamespace: "default", PodName: "job"})
		assert.Equal(t, codes.Unknown, status.Code(err))
		assert.Equal(t, "pod job in namespace default not found", status.Convert(err).Message())
		got, err := pr.Get(ctx, &api.GetPodResourcesRequest{PodNamespace: "default", PodName: "web"})
		require.NoError(t, err)
		assert.Equal(t, "web", got.GetPodResources().GetName())
	})
}
