package source_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

func printUpdate(u syncloop.PodUpdate) {
	fmt.Print(u.Op, " from ", u.Source, ":")
	for _, p := range u.Pods {
		fmt.Print(" ", p.Name)
	}
	fmt.Println()
}

// A file source and an API adapter merged into one stream.
func Example() {
	dir, _ := os.MkdirTemp("", "manifests")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "web.yaml"), []byte(`apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: web, image: busybox:1.36}]
`), 0o644)

	ctx, cancel := context.WithCancel(context.Background())
	cfg := source.NewConfig(source.ConfigOptions{})
	defer cfg.Wait()
	defer cancel()
	f, err := source.NewFile(source.FileOptions{Path: dir, NodeName: "edge-1", Out: cfg.Channel(ctx, syncloop.SourceFile)})
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan error)
	go func() { done <- f.Run(ctx) }()
	defer func() { cancel(); <-done }()
	printUpdate(<-cfg.Updates())

	api := cfg.Channel(ctx, syncloop.SourceAPI)
	pod := func(name string, phase v1.PodPhase) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: k8stypes.UID("uid-" + name)},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "nginx"}}}, Status: v1.PodStatus{Phase: phase}}
	}
	api <- syncloop.PodUpdate{Op: syncloop.OpSet, Pods: []*v1.Pod{pod("db", ""), pod("cache", "")}}
	printUpdate(<-cfg.Updates())
	api <- syncloop.PodUpdate{Op: syncloop.OpUpdate, Pods: []*v1.Pod{pod("db", v1.PodRunning)}}
	printUpdate(<-cfg.Updates())
	api <- syncloop.PodUpdate{Op: syncloop.OpRemove, Pods: []*v1.Pod{pod("cache", "")}}
	printUpdate(<-cfg.Updates())
	fmt.Println("all sources seen:", cfg.SeenAllSources(syncloop.SourceFile, syncloop.SourceAPI))
	// Output:
	// ADD from file: web-edge-1
	// ADD from api: db cache
	// RECONCILE from api: db
	// REMOVE from api: cache
	// all sources seen: true
}

// A static pod as a kubelet runs it.
func ExampleReadManifest() {
	pods, err := source.ReadManifest([]byte(`apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers: [{name: web, image: busybox}]
`), syncloop.SourceFile, "/etc/kubernetes/manifests/web.yaml", "Edge-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	p := pods[0]
	fmt.Println(p.Namespace, p.Name, p.Spec.NodeName, string(p.UID) == p.Annotations[podspec.ConfigHashAnnotation])
	fmt.Println(p.Spec.RestartPolicy, p.Spec.DNSPolicy, *p.Spec.TerminationGracePeriodSeconds, p.Spec.Containers[0].ImagePullPolicy)
	fmt.Println(p.Spec.Tolerations[0].Operator, p.Spec.Tolerations[0].Effect, p.Status.Phase)

	_, err = source.ReadManifest([]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {}\n"), syncloop.SourceFile, "x.yaml", "edge-1")
	fmt.Println(err)
	// Output:
	// default web-edge-1 Edge-1 true
	// Always ClusterFirst 30 Always
	// Exists NoExecute Pending
	// invalid pod default/x-edge-1: spec.containers: Required value
}
