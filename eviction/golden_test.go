package eviction_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/eviction/evictiontest"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
	"github.com/kubeletkit/kubeletkit/internal/golden"
)

// TestGolden replays the transcripts in testdata/ (see package
// internal/golden for the format). Commands:
//
//	thresholds hard=<flag> soft=<flag> grace=<flag> min=<flag> [maxgrace=N]
//	pod <name> [options]                       (parsePod)
//	use <name> [usage]                         (parseUsage: the pod's stats)
//	node [changes]                             (setNode)
//	gc frees=Q                                 (garbage collection leaves Q available on nodefs)
//	step <duration>
//	sync                                       (prints evictions, conditions)
//	admit <name>
//	remove <name>                              (the pod is no longer active)
//
// The node has 8Gi of memory, a 100Gi nodefs without a dedicated imagefs and
// a PID limit of 32768. Stats are stamped with the fake clock's time.
func TestGolden(t *testing.T) {
	golden.Run(t, func(t *testing.T) func(golden.Case) []string {
		return lineHarness(t, newScenario(t).run)
	})
}

// lineHarness adapts a harness of one-line commands, whose output ends in a
// newline, to golden's.
func lineHarness(t *testing.T, run func(t *testing.T, line string) string) func(golden.Case) []string {
	return func(c golden.Case) []string {
		if len(c.Input) > 0 {
			t.Fatalf("%s:%d: %s takes no input lines", c.File, c.Line, c.Command)
		}
		return golden.Lines(strings.TrimSuffix(run(t, c.Command), "\n"))
	}
}

// scenario is the state one transcript builds up: a node, its pods, and a
// manager over fakes on a fake clock.
type scenario struct {
	clk     *clocktesting.FakeClock
	st      *evictiontest.Stats
	killer  *evictiontest.Killer
	gc      *evictiontest.GC
	gcFrees uint64
	pods    podList
	m       *eviction.Manager
	max     int64
}

func newScenario(t *testing.T) *scenario {
	g := &scenario{clk: clocktesting.NewFakeClock(t0), st: &evictiontest.Stats{}, killer: &evictiontest.Killer{}, gc: &evictiontest.GC{}}
	n := healthyNode()
	n.at = t0
	g.st.Set(summary(n))
	g.gc.OnImages = func(context.Context) error {
		if g.gcFrees > 0 {
			g.st.Update(func(s *stats.Summary) { s.Node.Fs.AvailableBytes = g.gcFrees })
		}
		return nil
	}
	return g
}

func kv(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		out[k] = v
	}
	return out
}

func bytesOf(t *testing.T, s string) uint64 {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatalf("quantity %q: %v", s, err)
	}
	return uint64(q.Value())
}

// podList is a transcript's active pods, in the order they were added.
type podList []*v1.Pod

// get returns the pod called name, or a new one of that name (not added).
func (l podList) get(name string) *v1.Pod {
	if i := slices.IndexFunc(l, func(p *v1.Pod) bool { return p.Name == name }); i >= 0 {
		return l[i]
	}
	return newPod(name)
}

// remove takes the pod called name out of the list.
func (l *podList) remove(name string) {
	*l = slices.DeleteFunc(*l, func(p *v1.Pod) bool { return p.Name == name })
}

func (g *scenario) run(t *testing.T, line string) string {
	f := strings.Fields(line)
	args := kv(f[1:])
	stamp := stampAll(g.clk.Now())
	switch f[0] {
	case "thresholds":
		ts, err := eviction.ParseThresholds(args["hard"], args["soft"], args["grace"], args["min"])
		if err != nil {
			return "error: " + err.Error() + "\n"
		}
		if v, ok := args["maxgrace"]; ok {
			g.max, _ = strconv.ParseInt(v, 10, 64)
		}
		g.m, err = eviction.New(eviction.Options{Thresholds: ts, Stats: g.st, Pods: func() []*v1.Pod { return g.pods }, Killer: g.killer,
			ImageGC: g.gc, ContainerGC: g.gc, Clock: g.clk, MaxPodGracePeriodSeconds: g.max})
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, th := range g.m.Thresholds() {
			s = append(s, th.String())
		}
		return strings.Join(s, "\n") + "\n"
	case "pod":
		g.pods = append(g.pods, parsePod(f[1], args))
		return ""
	case "remove":
		g.pods.remove(f[1])
		return ""
	case "use":
		p := g.pods.get(f[1])
		u := parseUsage(t, f[2:])
		g.st.Update(func(s *stats.Summary) {
			setPodStats(s, podStats(p, u))
			stamp(s)
		})
		return ""
	case "node":
		g.st.Update(func(s *stats.Summary) {
			setNode(t, s, args)
			stamp(s)
		})
		return ""
	case "gc":
		g.gcFrees = bytesOf(t, args["frees"])
		return ""
	case "step":
		d, err := time.ParseDuration(f[1])
		if err != nil {
			t.Fatal(err)
		}
		g.clk.Step(d)
		g.st.Update(stampAll(g.clk.Now()))
		return ""
	case "sync":
		before := len(g.killer.Kills())
		gcBefore := len(g.gc.Calls())
		_, err := g.m.Synchronize(context.Background())
		var b strings.Builder
		if err != nil {
			fmt.Fprintf(&b, "error: %v\n", err)
		}
		if calls := g.gc.Calls()[gcBefore:]; len(calls) > 0 {
			fmt.Fprintf(&b, "gc: %s\n", strings.Join(calls, ", "))
		}
		for _, k := range g.killer.Kills()[before:] {
			fmt.Fprintf(&b, "evict %s grace=%d: %s\n", k.Name, *k.GracePeriod, strings.TrimSpace(k.Status.Message))
		}
		fmt.Fprintf(&b, "conditions: %v\n", g.m.NodeConditions())
		return b.String()
	case "admit":
		return printAdmission(g.m.Admit(g.pods.get(f[1])))
	}
	t.Fatalf("unknown command %q", line)
	return ""
}

func printAdmission(admit bool, reason, message string) string {
	if admit {
		return "admitted\n"
	}
	return fmt.Sprintf("rejected %s: %s\n", reason, strings.TrimSpace(message))
}

// stampAll sets the time of the node's stats to now.
func stampAll(now time.Time) func(s *stats.Summary) {
	return func(s *stats.Summary) {
		s.Node.Memory.Time, s.Node.Fs.Time, s.Node.ImageFs.Time, s.Node.Rlimit.Time = now, now, now, now
		if s.Node.ContainerFs != nil {
			s.Node.ContainerFs.Time = now
		}
	}
}

// parsePod builds the pod of a transcript's "pod <name> <options>":
//
//	prio=N mem-req=Q grace=N static besteffort-tolerant
//	eph-limit=Q                   (an ephemeral-storage limit on container c)
//	emptydir=<volume>:<sizeLimit> (sizeLimit may be empty)
func parsePod(name string, args map[string]string) *v1.Pod {
	var opts []podOpt
	for k, v := range args {
		switch k {
		case "prio":
			n, _ := strconv.Atoi(v)
			opts = append(opts, priority(int32(n)))
		case "mem-req":
			opts = append(opts, request(v1.ResourceMemory, v))
		case "grace":
			n, _ := strconv.ParseInt(v, 10, 64)
			opts = append(opts, grace(n))
		case "static":
			opts = append(opts, annotation("kubernetes.io/config.source", "file"))
		case "besteffort-tolerant":
			opts = append(opts, func(p *v1.Pod) {
				p.Spec.Tolerations = []v1.Toleration{{Key: eviction.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists}}
			})
		case "eph-limit":
			opts = append(opts, limit(v1.ResourceEphemeralStorage, v))
		case "emptydir":
			vol, size, _ := strings.Cut(v, ":")
			opts = append(opts, emptyDir(vol, size))
		}
	}
	return newPod(name, opts...)
}

// parseUsage reads a transcript's pod usage: mem=Q procs=N logs=Q rootfs=Q
// inodes=N vol=<volume>:Q.
func parseUsage(t *testing.T, args []string) usage {
	u := usage{}
	for k, v := range kv(args) {
		switch k {
		case "mem":
			u.memory = bytesOf(t, v)
		case "procs":
			u.procs = bytesOf(t, v)
		case "logs":
			u.logs = bytesOf(t, v)
		case "rootfs":
			u.rootfs = bytesOf(t, v)
		case "inodes":
			u.inodes = bytesOf(t, v)
		case "vol":
			vol, q, _ := strings.Cut(v, ":")
			u.volumes = map[string]uint64{vol: bytesOf(t, q)}
		}
	}
	return u
}

// setNode changes the node of s as a transcript's "node" command says:
// mem=Q (available memory of the 8Gi), fs=Q (available on nodefs),
// inodes=N (free on nodefs), imagefs=Q (available on imagefs), procs=N
// (running processes), dedicated (imagefs is a filesystem of its own),
// split (the writable layers are on a container filesystem of their own,
// at first a copy of nodefs), containerfs=Q (available on it).
func setNode(t *testing.T, s *stats.Summary, args map[string]string) {
	if v, ok := args["mem"]; ok {
		s.Node.Memory.AvailableBytes = bytesOf(t, v)
		s.Node.Memory.WorkingSetBytes = 8*Gi - s.Node.Memory.AvailableBytes
	}
	if v, ok := args["fs"]; ok {
		s.Node.Fs.AvailableBytes = bytesOf(t, v)
	}
	if v, ok := args["inodes"]; ok {
		s.Node.Fs.InodesFree = bytesOf(t, v)
	}
	if v, ok := args["imagefs"]; ok {
		s.Node.ImageFs.AvailableBytes = bytesOf(t, v)
	}
	if v, ok := args["procs"]; ok {
		s.Node.Rlimit.NumOfRunningProcesses = bytesOf(t, v)
	}
	if _, ok := args["dedicated"]; ok {
		s.Node.DedicatedImageFs = true
	}
	if _, ok := args["split"]; ok {
		s.Node.SplitContainerFs = true
		if s.Node.ContainerFs == nil {
			c := *s.Node.Fs // the writable layers on nodefs
			s.Node.ContainerFs = &c
		}
	}
	if v, ok := args["containerfs"]; ok {
		s.Node.ContainerFs.AvailableBytes = bytesOf(t, v)
	}
}

// setPodStats replaces the stats of ps's pod in s.
func setPodStats(s *stats.Summary, ps stats.PodStats) {
	s.Pods = slices.DeleteFunc(s.Pods, func(old stats.PodStats) bool { return old.UID == ps.UID })
	s.Pods = append(s.Pods, ps)
}
