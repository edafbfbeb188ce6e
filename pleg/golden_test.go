package pleg

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/internal/golden"
)

// The transcripts in testdata/ (see package internal/golden for the format)
// give a command line, input lines and the expected output:
//
//	# comment
//	relist fail=p2
//	p1 sandbox s1 ready
//	p1 container c1 running
//	----
//	p1 ContainerStarted c1
//	p1 ContainerStarted s1 (sandbox)
//
// The input of "diff" and "relist" is the whole runtime at that moment, one
// object per line: "<pod> sandbox <id> ready|notready" or
// "<pod> container <id> created|running|exited|unknown".
//
//   - diff: the pure Diff between the previous diff's input and this one;
//     every event, ContainerChanged included.
//   - relist [fail=<pod>,...]: one relist by the real relist machinery against
//     a runtime in that state, inspecting the listed pods fails; the output is
//     what the PLEG queues for delivery, in order, then the pods whose
//     inspection is to be retried and what the cache holds for the pods
//     inspected.
//   - list-error: one relist in which listing fails.
func TestGoldenTranscripts(t *testing.T) {
	golden.Run(t, func(t *testing.T) func(golden.Case) []string {
		h := newHarness()
		return func(c golden.Case) []string { return h.run(t, c) }
	})
}

type harness struct {
	rt    *stubRuntime
	clock *clocktesting.FakeClock
	cache *Cache
	out   *outbox
	r     *relister
	diffs *tracker
}

func newHarness() *harness {
	h := &harness{rt: newStub(), clock: clocktesting.NewFakeClock(time.Unix(1000, 0)), cache: NewCache(), diffs: newTracker()}
	c := resolveCommon(h.cache, h.clock, nil, nil)
	h.out = newOutbox(c.metrics, nil)
	h.r = newRelister(h.rt, h.cache, h.clock, c.log, c.metrics, h.out, 1, time.Minute)
	return h
}

// load sets the stub runtime to the state the input lines describe.
func (h *harness) load(t *testing.T, input []string) {
	t.Helper()
	h.rt.reset()
	for _, l := range input {
		f := strings.Fields(l)
		require.Len(t, f, 4, "bad input line %q", l)
		uid, kind, id, st := types.UID(f[0]), f[1], f[2], f[3]
		switch kind {
		case "sandbox":
			state, ok := map[string]runtimeapi.PodSandboxState{
				"ready": runtimeapi.PodSandboxState_SANDBOX_READY, "notready": runtimeapi.PodSandboxState_SANDBOX_NOTREADY,
			}[st]
			require.True(t, ok, "bad sandbox state in %q", l)
			h.rt.addSandbox(uid, id, state)
		case "container":
			state, ok := map[string]runtimeapi.ContainerState{
				"created": runtimeapi.ContainerState_CONTAINER_CREATED, "running": runtimeapi.ContainerState_CONTAINER_RUNNING,
				"exited": runtimeapi.ContainerState_CONTAINER_EXITED, "unknown": runtimeapi.ContainerState_CONTAINER_UNKNOWN,
			}[st]
			require.True(t, ok, "bad container state in %q", l)
			h.rt.addContainer(uid, "", id, id, state)
		default:
			t.Fatalf("bad input line %q", l)
		}
	}
}

func (h *harness) run(t *testing.T, c golden.Case) []string {
	t.Helper()
	var out []string
	fields := c.Fields()
	switch fields[0] {
	case "diff":
		h.load(t, c.Input)
		sbs, err := h.rt.ListPodSandbox(context.Background(), nil)
		require.NoError(t, err)
		cs, err := h.rt.ListContainers(context.Background(), nil)
		require.NoError(t, err)
		h.diffs.observe(sbs, cs)
		for _, ev := range h.diffs.diff(nil) {
			out = append(out, ev.String())
			h.diffs.commit(ev.PodUID)
		}
	case "relist", "list-error":
		h.load(t, c.Input)
		h.clock.Step(time.Second)
		var failing []string
		for _, a := range fields[1:] {
			if v, ok := strings.CutPrefix(a, "fail="); ok {
				failing = strings.Split(v, ",")
			}
		}
		// Inspecting a failing pod fails on its first sandbox or container.
		h.rt.mu.Lock()
		clear(h.rt.statusErr)
		for id, sb := range h.rt.sandboxes {
			if slices.Contains(failing, sb.Metadata.Uid) {
				h.rt.statusErr[id] = errors.New("injected")
			}
		}
		for id, c := range h.rt.containers {
			if slices.Contains(failing, c.Labels[cri.PodUIDLabel]) {
				h.rt.statusErr[id] = errors.New("injected")
			}
		}
		h.rt.listErr = nil
		if fields[0] == "list-error" {
			h.rt.listErr = errors.New("injected list error")
		}
		h.rt.mu.Unlock()
		if err := h.r.relist(context.Background()); err != nil {
			out = append(out, "error: "+err.Error())
		}
		h.out.mu.Lock()
		for {
			ev, ok := h.out.q.peek()
			if !ok {
				break
			}
			h.out.q.pop()
			out = append(out, ev.String())
		}
		h.out.mu.Unlock()
		if retry := slices.Sorted(maps.Keys(h.r.reinspect)); len(retry) > 0 {
			out = append(out, fmt.Sprintf("retry: %v", retry))
		}
		out = append(out, h.describeCache()...)
	default:
		t.Fatalf("%s:%d: unknown command %q", c.File, c.Line, c.Command)
	}
	if len(out) == 0 {
		out = []string{"(nothing)"}
	}
	return out
}

// describeCache renders the cache entries stamped by the last relist.
func (h *harness) describeCache() []string {
	now := h.clock.Now()
	h.cache.mu.Lock()
	defer h.cache.mu.Unlock()
	var lines []string
	for _, uid := range slices.Sorted(maps.Keys(h.cache.pods)) {
		e := h.cache.pods[uid]
		if !e.modified.Equal(now) {
			continue
		}
		switch {
		case e.deleted:
			lines = append(lines, fmt.Sprintf("cache %s: deleted", uid))
		case e.err != nil:
			lines = append(lines, fmt.Sprintf("cache %s: error", uid))
		default:
			var parts []string
			for _, sb := range e.status.Sandboxes {
				parts = append(parts, sb.Id+"="+strings.ToLower(strings.TrimPrefix(sb.State.String(), "SANDBOX_")))
			}
			for _, c := range e.status.Containers {
				parts = append(parts, c.Id+"="+strings.ToLower(strings.TrimPrefix(c.State.String(), "CONTAINER_")))
			}
			lines = append(lines, fmt.Sprintf("cache %s: %s", uid, strings.Join(parts, " ")))
		}
	}
	return lines
}
