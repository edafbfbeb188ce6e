package node_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/status/node"
	"github.com/kubeletkit/kubeletkit/status/node/nodetest"
)

// A node declares exactly the features it implements, under upstream's
// names, and only those, so that the API server refuses what the node
// would ignore.
func TestDeclaredFeatures(t *testing.T) {
	for _, tc := range []struct {
		name string
		caps node.Capabilities
		want []string
	}{
		{"nothing", node.Capabilities{}, nil},
		{"WebSockets", node.Capabilities{WebSockets: true}, []string{"ExtendWebSocketsToKubelet"}},
		{"in-place resize", node.Capabilities{InPlaceResize: true}, []string{"InPlacePodVerticalScalingInitContainers"}},
		{"both", node.Capabilities{WebSockets: true, InPlaceResize: true},
			[]string{"ExtendWebSocketsToKubelet", "InPlacePodVerticalScalingInitContainers"}},
		{"restart all containers", node.Capabilities{RestartAllContainers: true}, []string{"RestartAllContainersOnContainerExits"}},
		{"pod-level resize", node.Capabilities{PodLevelResize: true}, []string{"InPlacePodLevelResourcesVerticalScaling"}},
		{"all", node.Capabilities{WebSockets: true, InPlaceResize: true, PodLevelResize: true, RestartAllContainers: true},
			[]string{"ExtendWebSocketsToKubelet", "InPlacePodLevelResourcesVerticalScaling", "InPlacePodVerticalScalingInitContainers",
				"RestartAllContainersOnContainerExits"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := node.DeclaredFeatures(tc.caps)
			assert.Equal(t, tc.want, got)
			assert.NotContains(t, got, podspec.NodeFeatureUserNamespacesHostNetworkSupport)
			// Every name is one the API server accepts.
			_, err := node.New(node.Options{NodeName: "n", Sink: &nodetest.Sink{}, Runtime: nodetest.NewRuntime("x", "1"), Machine: nodetest.Machine{},
				Clock: clocktesting.NewFakeClock(t0), DeclaredFeatures: got})
			require.NoError(t, err)
		})
	}
}
