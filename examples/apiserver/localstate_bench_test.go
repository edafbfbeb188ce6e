package apiserver_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/localstate"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// BenchmarkStartFromLocalState is what a node restarted while its API
// server refuses connections pays before the agent gets its pods: open the
// bbolt file, index it, run the pod source, whose first list fails, and
// receive the SET of the kept pods.
func BenchmarkStartFromLocalState(b *testing.B) {
	for _, n := range []int{10, 110} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "localstate.db")
			store, err := localstate.OpenBolt(path, localstate.BoltOptions{})
			if err != nil {
				b.Fatal(err)
			}
			st, _ := localstate.New(store)
			pods := make([]*v1.Pod, n)
			for i := range pods {
				pods[i] = apiPod("default", fmt.Sprintf("pod-%03d", i), types.UID(fmt.Sprintf("uid-%03d", i)), "n1")
				pods[i].ResourceVersion = "1"
			}
			if _, err := st.SetPods(pods); err != nil {
				b.Fatal(err)
			}
			_ = store.Close()
			refused := &cache.ListWatch{
				ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) { return nil, errUnreachable },
				WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) {
					return nil, errUnreachable
				},
			}
			b.ReportAllocs()
			for b.Loop() {
				store, err := localstate.OpenBolt(path, localstate.BoltOptions{})
				if err != nil {
					b.Fatal(err)
				}
				st, err := localstate.New(store)
				if err != nil {
					b.Fatal(err)
				}
				out := make(chan syncloop.PodUpdate)
				src, err := apiserver.NewPodSource(nil, "n1", out, apiserver.PodSourceOptions{ListerWatcher: refused, LocalState: st, Backoff: fastBackoff})
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { _ = src.Run(ctx); close(done) }()
				if u := <-out; len(u.Pods) != n {
					b.Fatalf("%d pods", len(u.Pods))
				}
				cancel()
				<-done
				_ = store.Close()
			}
		})
	}
}
