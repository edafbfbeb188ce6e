package agenttest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/dra"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/podspec/validation"
	"github.com/kubeletkit/kubeletkit/status"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// apiServer is the node's API server, in memory: the pods bound to the
// node, their statuses, the static pods' statuses (as their mirror pods
// would hold them), events and ResourceClaims. The pods reach the agent as a complete list
// (OpSet) after every change of spec or metadata, as examples/apiserver's
// pod source sends them; status writes come back to the agent only when
// Node.Resend sends the pods again.
type apiServer struct {
	clock    *Clock
	nodeName string
	updates  chan syncloop.PodUpdate
	changed  chan struct{} // one pending notice that pods changed

	mu     sync.Mutex
	pods   map[string]*v1.Pod    // API pods by namespace/name; never modified, replaced
	uids   map[types.UID]string  // keys of pods, by UID
	static map[types.UID]*v1.Pod // static pods as last written
	nextID int
	events []Event
	claims map[string]*resourcev1.ResourceClaim // by namespace/name
}

var (
	_ status.Sink         = (*apiServer)(nil)
	_ agent.EventRecorder = (*apiServer)(nil)
	_ dra.Claims          = (*apiServer)(nil)
)

// ResourceClaim returns a copy of the claim, or the API server's NotFound.
func (s *apiServer) ResourceClaim(_ context.Context, namespace, name string) (*resourcev1.ResourceClaim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.claims[key(namespace, name)]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Group: resourcev1.GroupName, Resource: "resourceclaims"}, name)
	}
	return c.DeepCopy(), nil
}

// setClaim stores a copy of c.
func (s *apiServer) setClaim(c *resourcev1.ResourceClaim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.claims == nil {
		s.claims = map[string]*resourcev1.ResourceClaim{}
	}
	ns := c.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	c = c.DeepCopy()
	c.Namespace = ns
	s.claims[key(ns, c.Name)] = c
}

func newAPIServer(clk *Clock, nodeName string) *apiServer {
	return &apiServer{clock: clk, nodeName: nodeName, updates: make(chan syncloop.PodUpdate), changed: make(chan struct{}, 1),
		pods: map[string]*v1.Pod{}, uids: map[types.UID]string{}, static: map[types.UID]*v1.Pod{}}
}

// run sends the pod list now (which makes the source ready) and after
// every change, until ctx ends. The pods sent are the ones held, which are
// never modified (a change replaces the pod), so that the merger knows an
// unchanged pod by its pointer, as with an informer's cache.
func (s *apiServer) run(ctx context.Context) {
	for {
		s.mu.Lock()
		list := make([]*v1.Pod, 0, len(s.pods))
		for _, p := range s.pods {
			list = append(list, p)
		}
		s.mu.Unlock()
		sortPods(list)
		select {
		case s.updates <- syncloop.PodUpdate{Op: syncloop.OpSet, Source: syncloop.SourceAPI, Pods: list}:
		case <-ctx.Done():
			return
		}
		select {
		case <-s.changed:
		case <-ctx.Done():
			return
		}
	}
}

func (s *apiServer) notify() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func key(namespace, name string) string { return namespace + "/" + name }

func (s *apiServer) add(p *v1.Pod) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(p.Namespace, p.Name)
	if _, ok := s.pods[k]; ok {
		return fmt.Errorf("pods %q already exists", k)
	}
	if p.UID == "" {
		s.nextID++
		p.UID = types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", s.nextID))
	}
	s.pods[k] = p.DeepCopy()
	s.uids[p.UID] = k
	s.notify()
	return nil
}

func (s *apiServer) update(p *v1.Pod) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := p.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	old, ok := s.pods[key(ns, p.Name)]
	if !ok {
		return fmt.Errorf("pods %q not found", key(ns, p.Name))
	}
	next := p.DeepCopy()
	next.Namespace, next.UID, next.CreationTimestamp = ns, old.UID, old.CreationTimestamp
	next.DeletionTimestamp, next.DeletionGracePeriodSeconds = old.DeletionTimestamp, old.DeletionGracePeriodSeconds
	next.Status = old.Status
	if next.Spec.NodeName == "" {
		next.Spec.NodeName = old.Spec.NodeName
	}
	validation.DefaultPod(next)
	next.Generation = old.Generation + 1
	s.pods[key(ns, p.Name)] = next
	s.notify()
	return nil
}

// delete marks a pod deleted with a grace period (negative: the pod's
// own), or removes it at once with 0, as a forced deletion does.
func (s *apiServer) delete(namespace, name string, seconds int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := key(namespace, name)
	p, ok := s.pods[k]
	if !ok {
		return fmt.Errorf("pods %q not found", k)
	}
	if seconds < 0 {
		seconds = validation.DefaultTerminationGracePeriodSeconds
		if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
			seconds = *g
		}
	}
	if seconds == 0 {
		delete(s.pods, k)
		delete(s.uids, p.UID)
		s.notify()
		return nil
	}
	if p.DeletionTimestamp != nil {
		return nil
	}
	p = p.DeepCopy()
	ts := metav1.NewTime(s.clock.Now().Add(timeSeconds(seconds)))
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &seconds
	s.pods[k] = p
	s.notify()
	return nil
}

// GetPod implements status.Sink: the pod as stored; for a static pod, its
// mirror pod.
func (s *apiServer) GetPod(_ context.Context, pod *v1.Pod) (*v1.Pod, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if podspec.IsStatic(pod) {
		if p, ok := s.static[pod.UID]; ok {
			return p.DeepCopy(), nil
		}
		mirror := pod.DeepCopy()
		if mirror.Annotations == nil {
			mirror.Annotations = map[string]string{}
		}
		mirror.Annotations[podspec.ConfigMirrorAnnotation] = pod.Annotations[podspec.ConfigHashAnnotation]
		return mirror, nil
	}
	if p := s.byUIDLocked(pod.UID); p != nil {
		return p.DeepCopy(), nil
	}
	return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, status.ErrPodNotFound)
}

// UpdatePodStatus implements status.Sink.
func (s *apiServer) UpdatePodStatus(_ context.Context, pod *v1.Pod, st v1.PodStatus) (*v1.Pod, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if podspec.IsStatic(pod) || podspec.IsMirror(pod) {
		p := pod.DeepCopy()
		p.Status = *st.DeepCopy()
		s.static[pod.UID] = p
		return p.DeepCopy(), nil
	}
	p := s.byUIDLocked(pod.UID)
	if p == nil {
		return nil, fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, status.ErrPodNotFound)
	}
	p = p.DeepCopy()
	p.Status = *st.DeepCopy()
	s.pods[key(p.Namespace, p.Name)] = p
	return p.DeepCopy(), nil
}

// setCondition sets (or replaces) one condition of a pod's status, as
// another writer through the API does (a readiness gate's controller), and
// tells the node, which sees it as a status-only change.
func (s *apiServer) setCondition(namespace, name string, c v1.PodCondition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.pods[key(namespace, name)]
	if !ok {
		return fmt.Errorf("pods %q not found", key(namespace, name))
	}
	p := old.DeepCopy()
	replaced := false
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == c.Type {
			p.Status.Conditions[i], replaced = c, true
		}
	}
	if !replaced {
		p.Status.Conditions = append(p.Status.Conditions, c)
	}
	s.pods[key(namespace, name)] = p
	s.notify()
	return nil
}

// DeletePod implements status.Sink: the pod is gone at once, and the agent
// sees it leave.
func (s *apiServer) DeletePod(_ context.Context, pod *v1.Pod) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if podspec.IsStatic(pod) || podspec.IsMirror(pod) {
		delete(s.static, pod.UID)
		return nil
	}
	p := s.byUIDLocked(pod.UID)
	if p == nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, status.ErrPodNotFound)
	}
	delete(s.pods, key(p.Namespace, p.Name))
	delete(s.uids, p.UID)
	s.notify()
	return nil
}

func (s *apiServer) byUIDLocked(uid types.UID) *v1.Pod {
	return s.pods[s.uids[uid]]
}

func (s *apiServer) get(namespace, name string) *v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.pods[key(namespace, name)]; ok {
		return p.DeepCopy()
	}
	for _, p := range s.static {
		if p.Namespace == namespace && p.Name == name {
			return p.DeepCopy()
		}
	}
	return nil
}

func (s *apiServer) list() []*v1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*v1.Pod, 0, len(s.pods)+len(s.static))
	for _, p := range s.pods {
		out = append(out, p.DeepCopy())
	}
	for _, p := range s.static {
		out = append(out, p.DeepCopy())
	}
	sortPods(out)
	return out
}

func sortPods(pods []*v1.Pod) {
	slices.SortFunc(pods, func(a, b *v1.Pod) int {
		return strings.Compare(key(a.Namespace, a.Name), key(b.Namespace, b.Name))
	})
}

// Eventf implements agent.EventRecorder.
func (s *apiServer) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	e := Event{Time: s.clock.Now(), Object: describe(object), Type: eventtype, Reason: reason, Message: fmt.Sprintf(messageFmt, args...)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, e)
}

func (s *apiServer) eventList() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// describe names an event's object as "Kind namespace/name".
func describe(o runtime.Object) string {
	switch x := o.(type) {
	case *v1.Pod:
		return "Pod " + key(x.Namespace, x.Name)
	case *v1.ObjectReference:
		if x.Namespace == "" {
			return x.Kind + " " + x.Name
		}
		return x.Kind + " " + key(x.Namespace, x.Name)
	case metav1.Object:
		kind := o.GetObjectKind().GroupVersionKind().Kind
		if x.GetNamespace() == "" {
			return kind + " " + x.GetName()
		}
		return kind + " " + key(x.GetNamespace(), x.GetName())
	default:
		return fmt.Sprintf("%T", o)
	}
}
