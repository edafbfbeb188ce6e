package agent

import (
	"log/slog"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// NewFakeRuntime returns the in-process runtime the agent uses when no
// runtime is given, on clk (nil: the real clock). Any image can be pulled, and
// containers behave as busybox runs their commands, for the commands the
// example manifests use:
//
//	true, sh -c "exit 0"   exit 0 after 500ms (Completed)
//	false, sh -c "exit 1"  exit 1 after 500ms (Error)
//	anything else          runs until stopped; dies on SIGTERM (143)
//
// Every running container keeps 1m of CPU (a thousandth of a core) and 4Mi
// of memory busy, so that /stats/summary and kubectl top show figures.
//
// ExecSync (exec probes) follows cri/fake's built-in defaults: "false"
// exits 1, "echo ..." prints, everything else exits 0.
func NewFakeRuntime(clk clock.WithDelayedExecution, log *slog.Logger) *fake.Runtime {
	const runFor = 500 * time.Millisecond
	exit := func(code int32) fake.Behavior {
		return fake.Behavior{Outcome: fake.Exit, ExitCode: code, RunFor: runFor}
	}
	return fake.New(fake.Options{
		Clock:  clk,
		Logger: log,
		Rules: []fake.Rule{
			{Command: []string{"true"}, Behavior: exit(0)},
			{Command: []string{"sh", "-c", "exit 0"}, Behavior: exit(0)},
			{Command: []string{"false"}, Behavior: exit(1)},
			{Command: []string{"sh", "-c", "exit 1"}, Behavior: exit(1)},
		},
		UsageRules: []fake.UsageRule{{Usage: fake.Usage{NanoCores: 1_000_000, MemoryBytes: 4 << 20}}},
	})
}
