package logs_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/cri/logs"
)

// Reading the last two lines of a container's log with their timestamps,
// as `kubectl logs --tail=2 --timestamps` asks the kubelet to. The runtime
// split the second line into two partial entries; it counts once.
func Example() {
	dir, err := os.MkdirTemp("", "logs-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "0.log")
	err = os.WriteFile(path, []byte(
		"2026-03-01T12:00:00.1Z stdout F starting\n"+
			"2026-03-01T12:00:01.2Z stdout P listening on :8080,\n"+
			"2026-03-01T12:00:01.2Z stdout F  ready\n"+
			"2026-03-01T12:00:02.3Z stderr F warning: disk 91% full\n"), 0o644)
	if err != nil {
		panic(err)
	}

	opts := logs.NewOptions(&v1.PodLogOptions{TailLines: ptr.To[int64](2), Timestamps: true}, time.Now())
	// Not following: no container ID or runtime is needed.
	if err := logs.ReadLogs(context.Background(), path, "", opts, nil, os.Stdout, os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 2026-03-01T12:00:01.200000000Z listening on :8080, ready
	// 2026-03-01T12:00:02.300000000Z warning: disk 91% full
}
