package syncloop_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/syncloop"
)

// printer is a SyncHandler that prints what it is asked to do.
type printer struct{ done chan struct{} }

func (p printer) HandlePodAdditions(pods []*v1.Pod) { fmt.Println("add", pods[0].Name) }
func (p printer) HandlePodUpdates(pods []*v1.Pod)   { fmt.Println("update", pods[0].Name) }
func (p printer) HandlePodRemoves(pods []*v1.Pod) {
	fmt.Println("remove", pods[0].Name)
	close(p.done)
}
func (p printer) HandlePodReconcile(pods []*v1.Pod)       { fmt.Println("reconcile", pods[0].Name) }
func (p printer) HandlePodSyncs(pods []*v1.Pod)           { fmt.Println("sync", pods[0].Name) }
func (p printer) HandlePodCleanups(context.Context) error { return nil }

// A loop hands each configuration change to its handler, one at a time.
func Example() {
	updates := make(chan syncloop.PodUpdate)
	pods := syncloop.NewPodSet()
	handler := printer{done: make(chan struct{})}
	loop, err := syncloop.New(syncloop.Options{Handler: handler, Updates: updates, Pods: pods})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- loop.Run(ctx) }()

	web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "1"}}
	updates <- syncloop.PodUpdate{Op: syncloop.OpAdd, Source: syncloop.SourceFile, Pods: []*v1.Pod{web}}
	updates <- syncloop.PodUpdate{Op: syncloop.OpUpdate, Source: syncloop.SourceFile, Pods: []*v1.Pod{web}}
	updates <- syncloop.PodUpdate{Op: syncloop.OpRemove, Source: syncloop.SourceFile, Pods: []*v1.Pod{web}}
	<-handler.done
	cancel()
	fmt.Println(<-done)
	// Output:
	// add web
	// update web
	// remove web
	// context canceled
}
