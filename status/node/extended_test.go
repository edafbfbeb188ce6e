package node_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeletkit/kubeletkit/status/node"
)

// Device plugin resources are reported as the device manager gives them:
// allocatable is the healthy devices, never capacity less a reservation,
// and a resource with no allocatable of its own gets its capacity.
func TestBuildStatusExtendedResources(t *testing.T) {
	q := func(s string) resource.Quantity { return resource.MustParse(s) }
	s := node.BuildStatus(node.Input{
		Capacity: capacity(),
		Reserved: v1.ResourceList{"example.com/gpu": q("1")},
		ExtendedCapacity: v1.ResourceList{
			"example.com/gpu":  q("4"),
			"example.com/fpga": q("0"),
			"example.com/nic":  q("2"),
		},
		ExtendedAllocatable: v1.ResourceList{"example.com/gpu": q("3"), "example.com/fpga": q("0")},
		Now:                 t0,
	})
	for _, tc := range []struct {
		name                  v1.ResourceName
		capacity, allocatable string
	}{
		{"example.com/gpu", "4", "3"},
		{"example.com/fpga", "0", "0"},
		{"example.com/nic", "2", "2"},
		{v1.ResourceCPU, "4", "4"},
	} {
		c, a := s.Capacity[tc.name], s.Allocatable[tc.name]
		assert.Equal(t, tc.capacity, c.String(), "capacity of %s", tc.name)
		assert.Equal(t, tc.allocatable, a.String(), "allocatable of %s", tc.name)
	}
}
