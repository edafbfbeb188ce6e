package vkprovider_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/examples/vkprovider"
)

func TestMergeNodeStatus(t *testing.T) {
	base := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "vk", Labels: map[string]string{"type": "virtual-kubelet"}},
		Status: v1.NodeStatus{
			Phase:           v1.NodeRunning,
			Addresses:       []v1.NodeAddress{{Type: v1.NodeHostName, Address: "vk"}},
			DaemonEndpoints: v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: 10250}},
			Conditions: []v1.NodeCondition{
				{Type: v1.NodeReady, Status: v1.ConditionFalse},
				{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionFalse},
				{Type: v1.NodeDiskPressure},
			},
		},
	}
	agent := v1.NodeStatus{
		Capacity:   v1.ResourceList{v1.ResourcePods: resource.MustParse("110")},
		Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady"}},
		NodeInfo:   v1.NodeSystemInfo{KubeletVersion: "v0.0.0-kubeletkit"},
	}
	tests := []struct {
		name  string
		agent func(*v1.NodeStatus)
		want  func(*v1.NodeStatus)
	}{
		{
			name: "the agent's status, with what it lacks from VK's node",
			want: func(s *v1.NodeStatus) {
				s.Addresses = base.Status.Addresses
				s.DaemonEndpoints = base.Status.DaemonEndpoints
				s.Phase = v1.NodeRunning
				s.Conditions = append(s.Conditions, v1.NodeCondition{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionFalse})
			},
		},
		{
			name: "the agent's addresses and port win",
			agent: func(s *v1.NodeStatus) {
				s.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "192.0.2.1"}}
				s.DaemonEndpoints.KubeletEndpoint.Port = 10251
			},
			want: func(s *v1.NodeStatus) {
				s.Phase = v1.NodeRunning
				s.Conditions = append(s.Conditions, v1.NodeCondition{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionFalse})
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := *agent.DeepCopy()
			if tc.agent != nil {
				tc.agent(&st)
			}
			want := *st.DeepCopy()
			tc.want(&want)
			got := vkprovider.MergeNodeStatus(base, st)
			assert.Equal(t, want, got.Status)
			assert.Equal(t, base.ObjectMeta, got.ObjectMeta)
			assert.Len(t, base.Status.Conditions, 3, "base is not modified")
		})
	}
}
