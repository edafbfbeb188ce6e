package agent_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/eviction/evictiontest"
)

// A part that cannot start ends Run with its error: the parts already
// running are stopped (goleak checks that none is left) and Ready is never
// closed.
func TestRunStopsWhatRanWhenAPartCannotStart(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	for _, tc := range []struct {
		name string
		opts agent.Options
		want string
	}{
		{"a taken port, before anything runs", agent.Options{HTTP: agent.HTTPOptions{Listen: taken.Addr().String()}}, "agent: listen: "},
		// The file source is built once the blocks run, with a period it
		// refuses.
		{"a source, once the blocks run", agent.Options{
			HTTP:    agent.HTTPOptions{Listen: "127.0.0.1:0"},
			Sources: agent.SourceOptions{ManifestPath: t.TempDir()},
			Timings: agent.Timings{SourcePeriod: -time.Second},
		}, "agent: source: new file: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := tc.opts
			opts.RootDir, opts.Eviction.Stats = t.TempDir(), &evictiontest.Stats{}
			a, err := agent.New(opts)
			require.NoError(t, err)
			err = a.Run(context.Background())
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tc.want), "%v, want %q...", err, tc.want)
			select {
			case <-a.Ready():
				t.Fatal("Ready closed")
			default:
			}
		})
	}
}
