//go:build apiserver

package apiserver_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
)

// benchClient is clientFrom for a benchmark.
func benchClient(b *testing.B, env string) kubernetes.Interface {
	b.Helper()
	path := os.Getenv(env)
	if path == "" {
		b.Fatalf("%s is not set: run hack/controlplane-start.sh and source its env file", env)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		b.Fatal(err)
	}
	rc.QPS, rc.Burst = 200, 400
	tlsConfig, err := rest.TLSConfigFor(rc)
	if err != nil {
		b.Fatal(err)
	}
	rt, err := rest.HTTPWrappersForConfig(rc, &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true})
	if err != nil {
		b.Fatal(err)
	}
	c, err := kubernetes.NewForConfigAndClient(rc, &http.Client{Transport: rt})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkAPIPodStartup creates 100 pods bound to an agent's node through
// the API server and measures, per pod, the time from its creation to a
// watch seeing it Running (upstream's pod startup SLI, whose SLO is p99 ≤
// 5s), on the embedded fake runtime with upstream's default periods.
func BenchmarkAPIPodStartup(b *testing.B) {
	const pods = 100
	admin := benchClient(b, "KK_KUBECONFIG")
	nodeClient := benchClient(b, "KK_NODE_KUBECONFIG")
	nodeName := os.Getenv("KK_NODE_NAME")
	j, err := apiserver.Join(nodeClient, nodeName, apiserver.JoinOptions{Logger: benchLogger()})
	if err != nil {
		b.Fatal(err)
	}
	opts := agent.Options{NodeName: nodeName, Node: agent.NodeOptions{HostIPs: []string{"192.0.2.10"}}, RootDir: filepath.Join(b.TempDir(), "root"), Logger: benchLogger()}
	if err := j.Apply(&opts); err != nil {
		b.Fatal(err)
	}
	a, err := agent.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- j.Run(ctx, a) }()
	select {
	case <-a.Ready():
	case err := <-done:
		cancel()
		b.Fatalf("agent stopped at start: %v", err)
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()

	b.ReportAllocs()
	var p50s, p99s []time.Duration
	for b.Loop() {
		label := rand.String(8)
		w, err := admin.CoreV1().Pods("default").Watch(ctx, metav1.ListOptions{LabelSelector: "bench=" + label})
		if err != nil {
			b.Fatal(err)
		}
		created := make(map[string]time.Time, pods)
		for i := range pods {
			p := &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%s-%d", label, i), Labels: map[string]string{"bench": label}},
				Spec: v1.PodSpec{NodeName: nodeName, AutomountServiceAccountToken: new(bool),
					Containers: []v1.Container{{Name: "app", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}}},
			}
			created[p.Name] = time.Now()
			if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		running := map[string]time.Duration{}
		deadline := time.After(2 * time.Minute)
		for len(running) < pods {
			select {
			case ev := <-w.ResultChan():
				p, ok := ev.Object.(*v1.Pod)
				if ok && ev.Type == watch.Modified && p.Status.Phase == v1.PodRunning {
					if _, seen := running[p.Name]; !seen {
						running[p.Name] = time.Since(created[p.Name])
					}
				}
			case <-deadline:
				b.Fatalf("%d of %d pods Running after 2m", len(running), pods)
			}
		}
		w.Stop()
		ds := make([]time.Duration, 0, pods)
		for _, d := range running {
			ds = append(ds, d)
		}
		slices.Sort(ds)
		p50s, p99s = append(p50s, ds[pods/2]), append(p99s, ds[pods*99/100])
		b.Logf("iteration: p50 %s p99 %s", ds[pods/2], ds[pods*99/100])
		zero := int64(0)
		if err := admin.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero},
			metav1.ListOptions{LabelSelector: "bench=" + label}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(median(p50s).Milliseconds()), "p50-ms")
	b.ReportMetric(float64(median(p99s).Milliseconds()), "p99-ms")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func benchLogger() *slog.Logger {
	if os.Getenv("KK_DEBUG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
}
