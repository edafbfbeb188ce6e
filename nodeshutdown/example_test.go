package nodeshutdown_test

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/nodeshutdown"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// A node with a web server and a critical DNS pod shuts down with a 30s
// budget, 10s of it for critical pods: the web server is terminated first
// with 20s, then the DNS pod with 10s; both end Failed with upstream's
// reason, and a pod arriving meanwhile is refused.
func Example() {
	web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: ptr.To[int64](30)}}
	dns := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "dns"},
		Spec: v1.PodSpec{Priority: ptr.To(podspec.SystemCriticalPriority)}}
	var m *nodeshutdown.Manager
	m, err := nodeshutdown.New(nodeshutdown.Options{
		GracePeriod:             30 * time.Second,
		GracePeriodCriticalPods: 10 * time.Second,
		Pods:                    func() []*v1.Pod { return []*v1.Pod{dns, web} },
		Killer: nodeshutdown.KillerFunc(func(_ context.Context, pod *v1.Pod, grace int64, status func(*v1.PodStatus)) error {
			st := v1.PodStatus{Phase: v1.PodRunning}
			status(&st)
			fmt.Printf("killed %s/%s with %ds: %s %s\n", pod.Namespace, pod.Name, grace, st.Phase, st.Reason)
			admit, reason, _ := m.Admit(&v1.Pod{})
			fmt.Printf("  a new pod admitted: %t (%s)\n", admit, reason)
			return nil
		}),
		Clock: clocktesting.NewFakeClock(time.Now()),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("groups:", m.Groups())
	if err := m.Shutdown(context.Background()); err != nil {
		panic(err)
	}
	fmt.Println("node:", m.ShutdownStatus())
	// Output:
	// groups: [{0 20} {2000000000 10}]
	// killed default/web with 20s: Failed Terminated
	//   a new pod admitted: false (NodeShutdown)
	// killed kube-system/dns with 10s: Failed Terminated
	//   a new pod admitted: false (NodeShutdown)
	// node: node is shutting down
}
