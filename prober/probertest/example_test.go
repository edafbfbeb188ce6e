package probertest_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/prober"
	"github.com/kubeletkit/kubeletkit/prober/probertest"
)

// A scripted Runner stands in for the real probe runner: the app
// container's readiness probe fails, every other probe succeeds, and each
// run is recorded.
func ExampleRunner() {
	r := probertest.NewRunner()
	r.Set("app", prober.Readiness, prober.Outcome{Result: prober.Failure, Output: "HTTP probe failed with statuscode: 503"}, nil)

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"}}
	app := &v1.Container{Name: "app"}
	var runner prober.ProbeRunner = r
	for _, typ := range []prober.ProbeType{prober.Startup, prober.Readiness, prober.Liveness} {
		out, err := runner.Probe(context.Background(), prober.Target{Pod: pod, Container: app, ContainerID: "c1", Type: typ})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s: %s %q\n", typ, out.Result, out.Output)
	}
	for _, c := range r.Calls() {
		fmt.Println("call:", c.PodUID, c.Container, c.ContainerID, c.Type)
	}
	// Output:
	// Startup: Success ""
	// Readiness: Failure "HTTP probe failed with statuscode: 503"
	// Liveness: Success ""
	// call: uid-web app c1 Startup
	// call: uid-web app c1 Readiness
	// call: uid-web app c1 Liveness
}

// Statuses is the pod status source a prober.Manager reads container IDs and
// start times from; a test sets, changes and deletes statuses by pod UID.
func ExampleStatuses() {
	s := probertest.NewStatuses()
	var provider prober.StatusProvider = s

	s.Set("uid-web", v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{
		Name: "app", ContainerID: "containerd://c1",
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{}},
	}}})
	st, ok := provider.GetPodStatus("uid-web")
	fmt.Println(ok, st.ContainerStatuses[0].Name, st.ContainerStatuses[0].ContainerID)

	s.Delete("uid-web")
	_, ok = provider.GetPodStatus("uid-web")
	fmt.Println(ok)
	// Output:
	// true app containerd://c1
	// false
}
