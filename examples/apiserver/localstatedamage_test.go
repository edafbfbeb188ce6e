package apiserver_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/localstate"
)

// A local state whose file was found damaged when it was opened is a
// Warning event on the node once Run runs.
func TestRunRecordsLocalStateDamage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "localstate.db")
	require.NoError(t, os.WriteFile(path, bytes.Repeat([]byte{0xde, 0xad}, 4096), 0o600))
	store, err := localstate.OpenBolt(path, localstate.BoltOptions{})
	require.NoError(t, err)
	defer store.Close()
	st, err := localstate.New(store)
	require.NoError(t, err)

	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		allowAll(client, "")
		j, err := apiserver.Join(client, "n1", apiserver.JoinOptions{LocalState: st})
		require.NoError(t, err)
		var opts agent.Options
		require.NoError(t, j.Apply(&opts))
		ctx, cancel := context.WithCancel(context.Background())
		err = j.Run(ctx, &fakeAgent{name: "n1", run: func(ctx context.Context) error {
			<-opts.Cluster.Updates
			synctest.Wait() // the broadcaster writes the event
			cancel()
			<-ctx.Done()
			return nil
		}})
		require.NoError(t, err)

		evs, err := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		require.Len(t, evs.Items, 1)
		e := evs.Items[0]
		assert.Equal(t, apiserver.EventLocalStateDamaged, e.Reason)
		assert.Equal(t, "Warning", e.Type)
		assert.Equal(t, "Node", e.InvolvedObject.Kind)
		assert.Equal(t, "n1", e.InvolvedObject.Name)
		assert.Contains(t, e.Message, "moved aside to "+path+".corrupt-")
	})
}
