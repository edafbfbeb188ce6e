package agenttest_test

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/podspec/validation"
	"github.com/kubeletkit/kubeletkit/status/statustest"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// fatalTB records the first Fatalf and ends the goroutine, as testing.T
// does, without failing the test.
type fatalTB struct {
	testing.TB
	fatal string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatalOf runs fn in a goroutine and returns what it failed with on tb
// ("" when it did not).
func fatalOf(tb *fatalTB, fn func()) string {
	tb.fatal = ""
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	<-done
	return tb.fatal
}

// reasons is an agent.EventRecorder that keeps the reasons of the events.
type reasons struct {
	mu sync.Mutex
	r  []string
}

func (r *reasons) Eventf(_ k8sruntime.Object, _, reason, _ string, _ ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.r = append(r.r, reason)
}

func (r *reasons) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.r)
}

// A test that gives the node its own Updates and StatusSink gets a node
// that runs the pods it sends and writes to its sink, whose exec calls and
// hooks still show; the in-memory server's methods fail the test, saying
// why. Updates and StatusSink go together.
func TestOwnAPIServer(t *testing.T) {
	t.Run("half a seam", func(t *testing.T) {
		tests := []struct {
			name    string
			updates bool
			sink    bool
		}{
			{name: "updates alone", updates: true},
			{name: "status sink alone", sink: true},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					var o agenttest.Options
					if tt.updates {
						o.Agent.Cluster.Updates = make(chan syncloop.PodUpdate)
					}
					if tt.sink {
						o.Agent.Cluster.StatusSink = &statustest.Sink{}
					}
					tb := &fatalTB{TB: t}
					got := fatalOf(tb, func() { agenttest.NewNode(tb, o) })
					assert.Contains(t, got, "Updates and StatusSink go together")
				})
			})
		}
	})

	t.Run("own pods", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			sink := &statustest.Sink{}
			updates := make(chan syncloop.PodUpdate, 2)
			pod := hooked("web")
			pod.UID, pod.Spec.NodeName = types.UID("uid-web"), "node1"
			pod.CreationTimestamp = metav1.NewTime(time.Now())
			validation.DefaultPod(pod)
			sink.Add(pod)
			updates <- syncloop.PodUpdate{Op: syncloop.OpSet, Source: syncloop.SourceAPI, Pods: []*v1.Pod{pod}}

			rec := &reasons{}
			var n *agenttest.Node
			tb := &fatalTB{TB: t} // the node reports through it
			require.Empty(t, fatalOf(tb, func() {
				var o agenttest.Options
				o.Agent.Cluster.Updates, o.Agent.Cluster.StatusSink, o.Agent.Cluster.Recorder = updates, sink, rec
				n = agenttest.NewNode(tb, o)
			}))
			n.Step(5 * time.Second)
			got, ok := sink.Pod("default", "web")
			require.True(t, ok)
			assert.Equal(t, v1.PodRunning, got.Status.Phase, "the node wrote to the test's sink")
			assert.Equal(t, []agenttest.Hook{{Handler: "PostStart", Command: []string{"/hooks/warm"}}},
				n.Hooks("default", "web", "app"))
			var inMemory []string
			for _, e := range n.Events() {
				inMemory = append(inMemory, e.Reason)
			}
			assert.NotEmpty(t, inMemory, "events stay in memory")
			assert.Equal(t, inMemory, rec.list(), "and reach the test's recorder too")

			for _, c := range []struct {
				name string
				call func()
			}{
				{"AddPod", func() { n.AddPod(hooked("other")) }},
				{"Pod", func() { n.Pod("default", "web") }},
				{"PodReady", func() { n.PodReady("default", "web") }},
				{"Resend", n.Resend},
			} {
				got := fatalOf(tb, c.call)
				assert.Contains(t, got, ": the node's pods come from the test's own", c.name)
			}
		})
	})
}
