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
// watches. Its events are created in the fake API server by client-go's
// event broadcaster (examples/apiserver's NewRecorder, component
// "kubelet"), and agenttest keeps them too: Events and PodEvents.
//
// # What the fake API server adds
//
// client-go's object tracker stores objects; for pods, NewNode puts in
// front of it, for both clients, what a node depends on in an API server:
//
//   - admission: a pod created is given a name for its generateName (a
//     counter, not a random suffix), a UID, a creation time (the
//     bubble's), the API server's defaults (podspec/validation.DefaultPod)
//     and the node's name when it has none, as a one-node scheduler would;
//   - graceful deletion: deleting a pod bound to the node that is not
//     terminal sets its deletion timestamp and grace period (the delete's,
//     else the pod's terminationGracePeriodSeconds); the node stops it
//     (preStop hooks, then the containers) and deletes it with grace 0,
//     which removes it. Grace 0 removes a pod at once, and the node still
//     stops it as after a forced deletion;
//   - UID preconditions: a status patch (its metadata.uid) or a deletion
//     whose UID is not the stored pod's fails with Conflict, so that a
//     status meant for a deleted pod never lands on one created again
//     under its name;
//   - one lock around every pod write, so that a patch (a read and a
//     write of the tracker) does not interleave with another write.
//
// # Time
//
// Step and StepUntil move the node's clock from one of its deadlines to
// the next and the bubble's time along with it, so the timers of client-go
// and controller-runtime (a workqueue's back-off, a Result.RequeueAfter,
// a reflector's retry) fire on the way, at their own instants, and the
// node settles after each of its own. Nothing runs between steps but what
// is due now.
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
// The fake API server is client-go's object tracker: finalizers are
// ignored (a pod is removed when its node deletes it), field selectors are
// not applied (every pod is the node's), and there is no garbage
// collection of owned objects. A controller-runtime manager needs a REST
// config and cannot run on the fake: run a controller made with
// controller.NewTypedUnmanaged (with SkipNameValidation, since -count runs
// make it again) watching a source.Informer of Informers, as above.
package nodetest
