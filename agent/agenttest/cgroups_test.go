package agenttest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
)

// Cgroups.PodPidsLimit, upstream's podPidsLimit: a positive value is the
// pids.max of the pod's cgroup, made before its sandbox; 0 and upstream's
// default -1 write none. The cgroup file system is a directory shaped as a
// cgroup v2 mount.
func TestPodPidsLimit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit int64
		want  string // the pod cgroup's pids.max; "" for no file
	}{
		{"limit", 1024, "1024"},
		{"upstream's default", -1, ""},
		{"zero", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := t.TempDir()
				if err := os.WriteFile(filepath.Join(fs, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				n := agenttest.NewNode(t, agenttest.Options{Agent: agent.Options{
					Cgroups: agent.CgroupOptions{PerQOS: true, FS: fs, PodPidsLimit: tc.limit}}})
				p := n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"},
					Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}}})
				if !n.StepUntil(time.Minute, func() bool { return n.Pod("default", "web").Status.Phase == v1.PodRunning }) {
					t.Fatalf("pod not running: %+v", n.Pod("default", "web").Status)
				}
				b, err := os.ReadFile(filepath.Join(fs, "kubepods", "besteffort", "pod"+string(p.UID), "pids.max"))
				if got := strings.TrimSpace(string(b)); got != tc.want || (tc.want == "") != os.IsNotExist(err) {
					t.Errorf("the pod cgroup's pids.max = %q (%v), want %q", got, err, tc.want)
				}
			})
		})
	}
}
