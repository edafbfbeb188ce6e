package logind_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/godbus/dbus/v5"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/nodeshutdown"
	"github.com/kubeletkit/kubeletkit/nodeshutdown/logind"
)

// A node whose shutdowns logind announces. On a machine without a system
// bus (this example's Dial says so) the trigger logs why and returns at
// once, as upstream's kubelet goes on without graceful shutdown; with one,
// Run would watch PrepareForShutdown until its context ends.
func Example() {
	m, err := nodeshutdown.New(nodeshutdown.Options{
		GracePeriod:             30 * time.Second,
		GracePeriodCriticalPods: 10 * time.Second,
		Pods:                    func() []*v1.Pod { return nil },
		Killer: nodeshutdown.KillerFunc(func(context.Context, *v1.Pod, int64, func(*v1.PodStatus)) error {
			return nil
		}),
	})
	if err != nil {
		panic(err)
	}
	t, err := logind.New(logind.Options{
		GracePeriod: m.GracePeriod(), // InhibitDelayMaxSec is raised to it
		Dial:        func() (*dbus.Conn, error) { return nil, errors.New("no system bus") },
		Logger: slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}})),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("Run:", t.Run(context.Background(), m))
	// Output:
	// level=ERROR msg="Unable to watch the node for shutdown events; node shutdown will not be graceful" err="connect to the system bus: no system bus"
	// Run: <nil>
}
