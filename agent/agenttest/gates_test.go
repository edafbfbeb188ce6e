package agenttest_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cpumanager"
)

// With DisableCPUQuotaWithExclusiveCPUs turned off
// (Resources.KeepCPUQuotaWithExclusiveCPUs), a container holding exclusive
// CPUs runs on them with its CFS quota kept, as upstream's kubelet with the
// gate off (TestStaticCPUManager shows the default: no quota).
func TestExclusiveCPUsKeepQuotaWithTheGateOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		machine, err := cpumanager.NewTopology(1, 2, 2, 1)
		require.NoError(t, err)
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{RootDir: t.TempDir(),
			Node: agent.NodeOptions{KubeReserved: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}},
			Resources: agent.ResourceOptions{CPUManagerPolicy: cpumanager.PolicyStatic, Topology: machine,
				KeepCPUQuotaWithExclusiveCPUs: true}}})
		db := n.AddPod(sizedPod("db", "2", true))
		require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "db").Status.Phase == v1.PodRunning }))
		r := runningResources(n, string(db.UID), "app")
		assert.Equal(t, "1,3", r.GetCpusetCpus(), "a whole core of its own")
		assert.Equal(t, int64(200000), r.GetCpuQuota(), "the quota of its 2 CPUs, kept")
	})
}

// With PodLevelResources turned off (Resources.DisablePodLevelResources),
// a pod that sets spec.resources is refused at admission with upstream's
// reason and message, and a pod without them runs beside it.
func TestPodLevelResourcesRefusedWithTheGateOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{
			Resources: agent.ResourceOptions{DisablePodLevelResources: true}}})
		p := pod("pl", container("app", "sleep", "3600"))
		p.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}
		n.AddPod(p)
		n.AddPod(pod("plain", container("app", "sleep", "3600")))
		require.True(t, n.StepUntil(time.Minute, func() bool {
			return n.Pod("default", "pl").Status.Phase != "" && n.Pod("default", "plain").Status.Phase == v1.PodRunning
		}))
		got := n.Pod("default", "pl").Status
		assert.Equal(t, v1.PodFailed, got.Phase)
		assert.Equal(t, "PodLevelResourcesNotSupported", got.Reason)
		assert.Equal(t, "Pod was rejected: PodLevelResources feature gate is disabled", got.Message)
	})
}
