package volume

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/internal/golden"
)

// The transcripts in testdata/ drive the reconciler's core (see package
// internal/golden for the format). Commands:
//
//   - add <uid> <volume>[:content|:bad]...: the pod is desired with these
//     volumes (content: refreshed every minute; bad: cannot be processed).
//   - remove <uid>, refresh <uid>: RemovePod, Refresh.
//   - found <uid> <volume>: a volume found on disk at start.
//   - tick <duration>: the time moves on.
//   - plan [notready]: one pass; prints the operations, which are then in
//     flight (notready: the sources are not ready yet).
//   - done <op> [err=<message>]: the operation ends, e.g. "done SetUp a/x".
//   - state <uid>: what WaitForMount and WaitForUnmount would see.
//
// A command that prints nothing shows "(nothing)".
func TestGoldenTranscripts(t *testing.T) {
	golden.Run(t, func(t *testing.T) func(golden.Case) []string {
		g := &goldenHarness{r: newReconciler(time.Minute, nil), now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), inflight: map[string]operation{}}
		return func(c golden.Case) []string {
			out, err := g.run(c)
			if err != nil {
				t.Fatalf("%s:%d: %s: %v", c.File, c.Line, c.Command, err)
			}
			if len(out) == 0 {
				out = []string{"(nothing)"}
			}
			return out
		}
	})
}

type goldenHarness struct {
	r        *reconciler
	now      time.Time
	inflight map[string]operation
}

func (g *goldenHarness) run(c golden.Case) ([]string, error) {
	f := c.Fields()
	switch f[0] {
	case "add":
		if len(f) < 2 {
			return nil, errors.New("add <uid> <volume>...")
		}
		p, dvs := corePod(f[1], f[2:]...)
		g.r.setPod(p, dvs)
		return nil, nil
	case "remove":
		g.r.removePod(types.UID(f[1]))
		return nil, nil
	case "refresh":
		if !g.r.refreshPod(types.UID(f[1])) {
			return []string{"not desired"}, nil
		}
		return nil, nil
	case "found":
		g.r.addReconstructed(types.UID(f[1]), f[2], plainPlugin, plainPlugin.Name())
		return nil, nil
	case "tick":
		d, err := time.ParseDuration(f[1])
		if err != nil {
			return nil, err
		}
		g.now = g.now.Add(d)
		return nil, nil
	case "plan":
		ready := !(len(f) > 1 && f[1] == "notready")
		ops := g.r.plan(g.now, ready, nil)
		var out []string
		for _, op := range ops {
			key := op.kind.String() + " " + string(op.uid)
			if op.name != "" {
				key += "/" + op.name
			}
			g.inflight[key] = op
			out = append(out, op.String())
		}
		return out, nil
	case "done":
		if len(f) < 3 {
			return nil, errors.New("done <kind> <uid>[/<volume>] [err=...]")
		}
		key := f[1] + " " + f[2]
		op, ok := g.inflight[key]
		if !ok {
			return nil, fmt.Errorf("%s is not in flight", key)
		}
		delete(g.inflight, key)
		var err error
		if len(f) > 3 {
			err = errors.New(strings.TrimPrefix(strings.Join(f[3:], " "), "err="))
		}
		g.r.complete(op, Mounted{HostPath: "/" + op.name}, err, g.now)
		return nil, nil
	case "state":
		uid := types.UID(f[1])
		st := g.r.mountState(uid)
		var out []string
		if st.removed {
			out = append(out, "not desired")
		} else {
			out = append(out, fmt.Sprintf("unmounted=%v failed=%v", st.unmounted, st.failed))
			if r := st.reasons(); r != "" {
				out = append(out, "errors: "+r)
			}
		}
		out = append(out, fmt.Sprintf("mounted or busy=%v", g.r.mountedVolumes(uid)))
		return out, nil
	}
	return nil, fmt.Errorf("unknown command %q", f[0])
}
