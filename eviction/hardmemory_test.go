package eviction_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/eviction"
)

// The hard memory.available threshold in bytes: a quantity as it is, a
// percentage of the capacity; a soft one, or none, is 0.
func TestHardMemoryAvailable(t *testing.T) {
	q, err := eviction.ParseThresholds("memory.available<100Mi", "", "", "")
	require.NoError(t, err)
	assert.Equal(t, int64(100<<20), eviction.HardMemoryAvailable(q, 8<<30))
	p, err := eviction.ParseThresholds("memory.available<10%", "", "", "")
	require.NoError(t, err)
	assert.Equal(t, int64(float64(8<<30)*float64(float32(0.1))), eviction.HardMemoryAvailable(p, 8<<30), "the percentage is a float32, as parsed")
	assert.Zero(t, eviction.HardMemoryAvailable(nil, 8<<30))
}
