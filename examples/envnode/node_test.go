package envnode_test

import (
	"context"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"github.com/kubeletkit/kubeletkit/examples/envnode"
)

func TestStartRefusesANilConfig(t *testing.T) {
	_, err := envnode.Start(context.Background(), nil, envnode.Options{})
	assert.ErrorIs(t, err, envnode.ErrInvalidArgument)
}

func TestStartFailsAndCleansUpWhenTheServerIsUnreachable(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where the node's root directory goes
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Nothing listens on port 1: the node's access check fails at once.
	_, err := envnode.Start(ctx, &rest.Config{Host: "http://127.0.0.1:1"}, envnode.Options{Name: "Lonely"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "start node lonely: ")
	assert.Contains(t, err.Error(), "check access")
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, entries, "the node's root directory is removed")
}

func TestFastTimingsSetsEveryPeriod(t *testing.T) {
	v := reflect.ValueOf(envnode.FastTimings())
	for i := range v.NumField() {
		assert.NotZero(t, v.Field(i).Interface(), "%s is upstream's", v.Type().Field(i).Name)
	}
}
