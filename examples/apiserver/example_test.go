package apiserver_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

// The pod source feeds the merger: the API server's list arrives as a SET,
// which the merger turns into an ADD, and the source is ready. A status
// sink then writes the pod's status back.
func Example() {
	ctx, cancel := context.WithCancel(context.Background())
	client := fake.NewClientset(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "u1"},
		Spec:       v1.PodSpec{NodeName: "node-1", Containers: []v1.Container{{Name: "web", Image: "nginx"}}},
	})

	cfg := source.NewConfig(source.ConfigOptions{NodeName: "node-1"})
	src, err := apiserver.NewPodSource(client, "node-1", cfg.Channel(ctx, syncloop.SourceAPI), apiserver.PodSourceOptions{})
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx) }()

	u := <-cfg.Updates()
	fmt.Println(u.Op, u.Source, u.Pods[0].Namespace+"/"+u.Pods[0].Name)
	fmt.Println("api source ready:", cfg.SeenAllSources(syncloop.SourceAPI))

	sink, err := apiserver.NewStatusSink(client, apiserver.StatusSinkOptions{})
	if err != nil {
		panic(err)
	}
	pod, err := sink.GetPod(ctx, u.Pods[0])
	if err != nil {
		panic(err)
	}
	updated, err := sink.UpdatePodStatus(ctx, pod, v1.PodStatus{Phase: v1.PodRunning})
	if err != nil {
		panic(err)
	}
	fmt.Println("stored phase:", updated.Status.Phase)

	cancel()
	<-done
	cfg.Wait()
	// Output:
	// ADD api default/web
	// api source ready: true
	// stored phase: Running
}

// Join builds a node's adapters and Apply puts them into an agent's
// options; Joined.Run would then check the node's permissions and run the
// agent with them.
func ExampleJoin() {
	client := fake.NewClientset()
	j, err := apiserver.Join(client, "Node-1", apiserver.JoinOptions{NodeLeaseDuration: 20 * time.Second})
	if err != nil {
		panic(err)
	}
	var opts agent.Options
	if err := j.Apply(&opts); err != nil {
		panic(err)
	}
	fmt.Println("node:", opts.NodeName)
	fmt.Println("pods from the API server:", opts.Cluster.Updates != nil)
	fmt.Println("lease:", opts.Cluster.LeaseDuration, "hostIP reported:", opts.Cluster.ReportHostIPs)

	_, err = apiserver.Join(client, "node-1", apiserver.JoinOptions{SkipNodeRegistration: true, NodeLabels: map[string]string{"zone": "a"}})
	fmt.Println(errors.Is(err, apiserver.ErrInvalidArgument))
	// Output:
	// node: node-1
	// pods from the API server: true
	// lease: 20s hostIP reported: true
	// true
}
