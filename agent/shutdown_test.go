package agent_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/nodeshutdown"
)

func TestShutdownOptionsValidated(t *testing.T) {
	trigger := nodeshutdown.TriggerFunc(func(context.Context, nodeshutdown.Handler) error { return nil })
	for _, tc := range []struct {
		name string
		opts agent.ShutdownOptions
		want string // "" when valid
	}{
		{"off", agent.ShutdownOptions{}, ""},
		{"upstream's example", agent.ShutdownOptions{GracePeriod: 30 * time.Second, GracePeriodCriticalPods: 10 * time.Second}, ""},
		{"critical above the whole", agent.ShutdownOptions{GracePeriod: 10 * time.Second, GracePeriodCriticalPods: 20 * time.Second},
			"agent: node shutdown: shutdownGracePeriodCriticalPods 20s must be <= shutdownGracePeriod 10s: invalid options"},
		{"under a second", agent.ShutdownOptions{GracePeriod: 500 * time.Millisecond},
			"agent: node shutdown: shutdownGracePeriod 500ms must be either zero or otherwise >= 1 sec: invalid options"},
		{"a trigger with nothing to do", agent.ShutdownOptions{Trigger: trigger},
			"agent: shutdown: a trigger without a grace period: invalid options"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := agent.New(agent.Options{RootDir: t.TempDir(), Shutdown: tc.opts})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.want || !errors.Is(err, agent.ErrInvalidOptions) {
				t.Fatalf("New: %v, want %q wrapping ErrInvalidOptions", err, tc.want)
			}
		})
	}
}
