package volume

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// BenchmarkReconcileNothingToDo plans a node whose pods (three volumes
// each: an emptyDir, a configMap and a projected token, like a typical pod
// with kube-api-access) are all set up and fresh: the reconciler's cost
// every 100ms in the steady state. "quiet" is a period in which no pod
// changed; "synced=all" is the worst case, every pod re-added by a sync
// (WaitForMount) since the last pass, so every volume is looked at.
func BenchmarkReconcileNothingToDo(b *testing.B) {
	for _, tc := range []struct {
		pods  int
		dirty bool
	}{{1000, false}, {10000, false}, {1000, true}, {10000, true}} {
		name := fmt.Sprintf("pods=%d/quiet", tc.pods)
		if tc.dirty {
			name = fmt.Sprintf("pods=%d/synced=all", tc.pods)
		}
		pods := tc.pods
		b.Run(name, func(b *testing.B) {
			r := newReconciler(time.Minute, nil)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			plain := &stubPlugin{name: "test/plain"}
			content := &stubPlugin{name: "test/content", remount: true}
			for i := 0; i < pods; i++ {
				pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p", i), Namespace: "ns", UID: types.UID(fmt.Sprint("uid-", i))}}
				pod.Spec.Volumes = []v1.Volume{{Name: "cache"}, {Name: "config"}, {Name: "kube-api-access"}}
				dvs := []desiredVol{
					{spec: &pod.Spec.Volumes[0], plugin: plain},
					{spec: &pod.Spec.Volumes[1], plugin: content, remount: true},
					{spec: &pod.Spec.Volumes[2], plugin: content, remount: true},
				}
				r.setPod(pod, dvs)
			}
			for _, op := range r.plan(now, true, nil) {
				r.complete(op, Mounted{}, nil, now)
			}
			var buf []operation
			b.ReportAllocs()
			for b.Loop() {
				if tc.dirty {
					for _, p := range r.list {
						p.dirty = true
					}
				}
				buf = r.plan(now, true, buf[:0])
				if len(buf) != 0 {
					b.Fatalf("planned %d operations", len(buf))
				}
			}
		})
	}
}
