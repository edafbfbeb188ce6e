package checksum_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/kubeletkit/kubeletkit/internal/checksum"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestJSON(t *testing.T) {
	a, err := checksum.JSON(map[string]int{"a": 1})
	require.NoError(t, err)
	b, err := checksum.JSON(map[string]int{"a": 2})
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
	again, err := checksum.JSON(map[string]int{"a": 1})
	require.NoError(t, err)
	assert.Equal(t, a, again, "deterministic")
	_, err = checksum.JSON(func() {})
	assert.Error(t, err)
}
