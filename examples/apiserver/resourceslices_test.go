package apiserver_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

// The node's ResourceSlices are deleted as upstream's kubelet deletes
// them: one DeleteCollection of resource.k8s.io/v1 resourceslices with the
// field selectors spec.nodeName and, for one driver, spec.driver.
func TestResourceSlices(t *testing.T) {
	client := fake.NewClientset()
	selectors := func() []string {
		var out []string
		for _, a := range client.Actions() {
			dc, ok := a.(clienttesting.DeleteCollectionAction)
			if !assert.True(t, ok, "%T", a) {
				continue
			}
			assert.Equal(t, "resource.k8s.io/v1, Resource=resourceslices", dc.GetResource().String())
			out = append(out, dc.GetListRestrictions().Fields.String())
		}
		return out
	}
	s := apiserver.NewResourceSlices(client, "node-1")
	ctx := context.Background()
	require.NoError(t, s.DeleteResourceSlices(ctx, ""))
	require.NoError(t, s.DeleteResourceSlices(ctx, "gpu.example.com"))
	assert.Equal(t, []string{"spec.nodeName=node-1", "spec.driver=gpu.example.com,spec.nodeName=node-1"}, selectors())

	// Through package dra: the start-up wipe of all the node's slices.
	m, err := dra.New(dra.Options{Slices: s})
	require.NoError(t, err)
	t.Cleanup(m.Registry().Close)
	require.NoError(t, m.Registry().WipeAll(ctx))
	assert.Equal(t, []string{"spec.nodeName=node-1", "spec.driver=gpu.example.com,spec.nodeName=node-1", "spec.nodeName=node-1"}, selectors())
}
