// Package nodetest runs a controller's own code against a whole fake node:
// an agent/agenttest node whose pods live in client-go's fake API server
// (k8s.io/client-go/kubernetes/fake), which a client-go clientset, shared
// informers and a controller-runtime client (its fake, on the same object
// tracker) read, write and watch. Everything runs inside the test's
// testing/synctest bubble: the node on its fake Clock, the clients,
// informers and controllers on the bubble's time, which the node keeps in
// step with its Clock, so that one Step moves both.
//
//	synctest.Test(t, func(t *testing.T) {
//		n := nodetest.NewNode(t, nodetest.Options{Node: agenttest.Options{Rules: rules}})
//		c, _ := controller.NewTypedUnmanaged("restarter", controller.Options{
//			Reconciler: &restarter{c: n.Client}, SkipNameValidation: ptr.To(true)})
//		_ = c.Watch(source.Informer{Informer: n.Informers.Core().V1().Pods().Informer(),
//			Handler: &handler.EnqueueRequestForObject{}})
//		n.Start(c) // the informers, then the controller, in the bubble
//		n.CreatePod(pod)
//		n.StepUntil(5*time.Minute, func() bool { ... })
//	})
//
// The node receives its pods as a node joined to an API server does
// (examples/apiserver's PodSource over the clientset: the complete list
// after every change, status writes included) and writes their statuses
// through examples/apiserver's StatusSink, so a controller sees them in its
// watches. The node's events stay in agenttest's recorder: Events and
// PodEvents.
//
// # Admission
//
// A pod created through either client is admitted as an API server and a
// one-node scheduler would: a name for its generateName (a counter, not a
// random suffix), a UID, a creation time (the bubble's), the API server's
// defaults (podspec/validation.DefaultPod) and the node's name when it has
// none.
//
// # Threading
//
// NewNode starts the node, the pod source's reflector and, through Start,
// the informers and each runnable in goroutines of the bubble. They stop
// when the test ends: the runnables first, then the node, then the pod
// source and the informers; NewNode's cleanups return once they have.
//
// # Limits
//
// The fake API server is client-go's object tracker: deletion is at once
// (no graceful deletion, no deletion timestamp: the node sees the pod go
// as after a forced deletion), finalizers and delete preconditions are
// ignored, field selectors are not applied (every pod is the node's), and
// there is no garbage collection of owned objects. A controller-runtime
// manager needs a REST config and cannot run on the fake: run a controller
// made with controller.NewTypedUnmanaged (with SkipNameValidation, since
// -count runs make it again) watching a source.Informer of Informers, as
// above.
package nodetest
