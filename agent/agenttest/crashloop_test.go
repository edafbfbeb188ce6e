package agenttest_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata")

// transcript records a pod's line whenever it changes, and the node's
// events, each with the node's time since start.
type transcript struct {
	n     *agenttest.Node
	start time.Time
	b     strings.Builder
	lines map[string]string
	seen  int // events already written
}

func newTranscript(n *agenttest.Node) *transcript {
	return &transcript{n: n, start: n.Now(), lines: map[string]string{}}
}

func (tr *transcript) at() string { return fmt.Sprintf("%5.1fs", tr.n.Now().Sub(tr.start).Seconds()) }

// observe writes the events recorded since the last call and the lines of
// the named pods that changed.
func (tr *transcript) observe(names ...string) {
	events := tr.n.Events()
	for _, e := range events[tr.seen:] {
		fmt.Fprintf(&tr.b, "%5.1fs event %s\n", e.Time.Sub(tr.start).Seconds(), e)
	}
	tr.seen = len(events)
	for _, name := range names {
		l := line(tr.n.Pod("default", name))
		if tr.lines[name] != l {
			fmt.Fprintf(&tr.b, "%s %s: %s\n", tr.at(), name, l)
			tr.lines[name] = l
		}
	}
}

// run steps the node a second at a time for d, observing after each step.
func (tr *transcript) run(d time.Duration, names ...string) {
	for range int(d / time.Second) {
		tr.n.Step(time.Second)
		tr.observe(names...)
	}
}

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run go test -update to write it")
	assert.Equal(t, string(want), got)
}

// line is one pod as a person reads it: phase and reason, then each
// container's state and restart count.
func line(p *v1.Pod) string {
	if p == nil {
		return "<gone>"
	}
	var b strings.Builder
	b.WriteString(string(p.Status.Phase))
	if p.Status.Reason != "" {
		fmt.Fprintf(&b, "(%s)", p.Status.Reason)
	}
	for _, c := range p.Status.Conditions {
		if (c.Type == v1.PodReady || c.Type == v1.AllContainersRestarting) && c.Status == v1.ConditionTrue {
			b.WriteString(" " + string(c.Type))
		}
	}
	write := func(prefix string, cs []v1.ContainerStatus) {
		for _, c := range cs {
			fmt.Fprintf(&b, " %s%s=", prefix, c.Name)
			switch {
			case c.State.Running != nil:
				b.WriteString("running")
				if c.Ready {
					b.WriteString("(ready)")
				}
			case c.State.Terminated != nil:
				fmt.Fprintf(&b, "terminated(%s,%d)", c.State.Terminated.Reason, c.State.Terminated.ExitCode)
			case c.State.Waiting != nil:
				fmt.Fprintf(&b, "waiting(%s", c.State.Waiting.Reason)
				if c.State.Waiting.Message != "" {
					fmt.Fprintf(&b, ": %s", c.State.Waiting.Message)
				}
				b.WriteString(")")
			}
			if c.RestartCount > 0 {
				fmt.Fprintf(&b, "[restarts=%d]", c.RestartCount)
			}
		}
	}
	write("init:", p.Status.InitContainerStatuses)
	write("", p.Status.ContainerStatuses)
	return b.String()
}

func pod(name string, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: v1.PodSpec{Containers: containers}}
}

// crashLoop runs a container that exits 1 at once under restartPolicy
// Always for 16 minutes of the node's time, inside a synctest bubble, and
// returns the transcript.
func crashLoop(t *testing.T) string {
	var out string
	synctest.Test(t, func(t *testing.T) { out = crashLoopOn(t) })
	return out
}

func crashLoopOn(t *testing.T) string {
	n := agenttest.NewNode(t, agenttest.Options{Rules: []fake.Rule{
		{Command: []string{"false"}, Behavior: fake.Behavior{Outcome: fake.Exit, ExitCode: 1}},
	}})
	tr := newTranscript(n)
	n.AddPod(pod("crash", v1.Container{Name: "app", Image: "busybox:1.36", Command: []string{"false"}}))
	tr.observe("crash")
	tr.run(16*time.Minute, "crash")
	return tr.b.String()
}

// A container that keeps failing is restarted after 10s, 20s, 40s, 80s,
// 160s, then every 300s, with upstream's restart counts, CrashLoopBackOff
// messages and BackOff events; every run prints the same transcript.
func TestCrashLoopBackOff(t *testing.T) {
	golden(t, "crashloop.txt", crashLoop(t))
}

// The transcript does not depend on how goroutines were scheduled.
func TestCrashLoopBackOffIsDeterministic(t *testing.T) {
	runs := 50
	if testing.Short() {
		runs = 5
	}
	first := crashLoop(t)
	for i := 1; i < runs; i++ {
		require.Equal(t, first, crashLoop(t), "run %d", i)
	}
}

// With Node.MaxContainerRestartPeriod (upstream's
// crashLoopBackOff.maxContainerRestartPeriod, KubeletCrashLoopBackOffMax,
// beta and on by default since 1.35) at 30s, the crash loop doubles from
// 10s up to 30s instead of 5m: restarts at 1s, 11s, 31s, then every 30s.
func TestCrashLoopBackOffMaxContainerRestartPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{
			Agent: agent.Options{Node: agent.NodeOptions{MaxContainerRestartPeriod: 30 * time.Second}},
			Rules: []fake.Rule{{Command: []string{"false"}, Behavior: fake.Behavior{Outcome: fake.Exit, ExitCode: 1}}},
		})
		start := n.Now()
		n.AddPod(pod("crash", v1.Container{Name: "app", Image: "busybox:1.36", Command: []string{"false"}}))
		var restarts []string
		seen := int32(0)
		for range 3 * 60 {
			n.Step(time.Second)
			p := n.Pod("default", "crash")
			if c := p.Status.ContainerStatuses; len(c) == 1 && c[0].RestartCount > seen {
				seen = c[0].RestartCount
				restarts = append(restarts, n.Now().Sub(start).String())
			}
		}
		assert.Equal(t, []string{"1s", "11s", "31s", "1m1s", "1m31s", "2m1s", "2m31s"}, restarts)
	})
}

// A period outside upstream's range, 1s to 300s, fails New.
func TestMaxContainerRestartPeriodRange(t *testing.T) {
	for _, p := range []time.Duration{500 * time.Millisecond, 301 * time.Second, -time.Second} {
		_, err := agent.New(agent.Options{NodeName: "n", RootDir: t.TempDir(), Node: agent.NodeOptions{MaxContainerRestartPeriod: p}})
		assert.ErrorIs(t, err, agent.ErrInvalidOptions, "%s", p)
	}
}
