package syncloop

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// server (a manifest file or URL), by its config.source annotation.
func IsStatic(pod *v1.Pod) bool { return podspec.IsStatic(pod) }

// of a static pod, which a kubelet reports on but never runs.
func IsMirror(pod *v1.Pod) bool { return podspec.IsMirror(pod) }

// PodSet is the desired pod set (upstream's pod manager): the pods the
// configuration asks for, by UID and by full name, with mirror pods kept
// apart. It is safe for concurrent use. It stores the pointers it is given;
// callers must not modify a pod after handing it over.
type PodSet struct {
	mu         sync.RWMutex
	byUID      map[types.UID]*v1.Pod
	byFullName map[string]*v1.Pod
	// Mirror pods, by their own UID and by full name (the static pod's).
	mirrorByUID      map[types.UID]*v1.Pod
	mirrorByFullName map[string]*v1.Pod
}

// NewPodSet returns an empty set.
func NewPodSet() *PodSet {
	return &PodSet{
		byUID:            map[types.UID]*v1.Pod{},
		byFullName:       map[string]*v1.Pod{},
		mirrorByUID:      map[types.UID]*v1.Pod{},
		mirrorByFullName: map[string]*v1.Pod{},
	}
}

// Set replaces the whole set with pods.
func (s *PodSet) Set(pods []*v1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.byUID)
	clear(s.byFullName)
	clear(s.mirrorByUID)
	clear(s.mirrorByFullName)
	for _, p := range pods {
		s.put(p)
	}
}

// Add adds a pod, or replaces the pod with its UID.
func (s *PodSet) Add(pod *v1.Pod) { s.Update(pod) }

// Update replaces the pod with the same UID, or adds it.
func (s *PodSet) Update(pod *v1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.put(pod)
}

// put stores pod; the caller holds the write lock.
func (s *PodSet) put(pod *v1.Pod) {
	byUID, byName := s.byUID, s.byFullName
	if podspec.IsMirror(pod) {
		byUID, byName = s.mirrorByUID, s.mirrorByFullName
	}
	if old, ok := byUID[pod.UID]; ok && podspec.FullName(old) != podspec.FullName(pod) && byName[podspec.FullName(old)] == old {
		delete(byName, podspec.FullName(old))
	}
	byUID[pod.UID] = pod
	byName[podspec.FullName(pod)] = pod
}

// Remove removes the pod with pod's UID. The full-name entry goes only if
// it still points at that UID: a static pod's new UID may have taken it.
func (s *PodSet) Remove(pod *v1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	byUID, byName := s.byUID, s.byFullName
	if podspec.IsMirror(pod) {
		byUID, byName = s.mirrorByUID, s.mirrorByFullName
	}
	old, ok := byUID[pod.UID]
	if !ok {
		return
	}
	delete(byUID, pod.UID)
	if cur, ok := byName[podspec.FullName(old)]; ok && cur.UID == old.UID {
		delete(byName, podspec.FullName(old))
	}
}

// GetPodByUID returns the (non-mirror) pod with the UID.
func (s *PodSet) GetPodByUID(uid types.UID) (*v1.Pod, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.byUID[uid]
	return p, ok
}

// GetPodByFullName returns the (non-mirror) pod named "name_namespace".
func (s *PodSet) GetPodByFullName(fullName string) (*v1.Pod, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.byFullName[fullName]
	return p, ok
}

// GetPods returns the desired pods, mirror pods excluded, in no particular
// order. The slice is the caller's.
func (s *PodSet) GetPods() []*v1.Pod {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*v1.Pod, 0, len(s.byUID))
	for _, p := range s.byUID {
		out = append(out, p)
	}
	return out
}

// Len returns how many (non-mirror) pods the set holds.
func (s *PodSet) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.byUID)
}

// GetMirrorPodByPod returns the mirror pod of a static pod, found by full
// name.
func (s *PodSet) GetMirrorPodByPod(pod *v1.Pod) (*v1.Pod, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.mirrorByFullName[podspec.FullName(pod)]
	return p, ok
}

// GetPodByMirrorPod returns the static pod a mirror pod stands for.
func (s *PodSet) GetPodByMirrorPod(mirror *v1.Pod) (*v1.Pod, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.byFullName[podspec.FullName(mirror)]
	return p, ok
}

// GetMirrorPods returns the mirror pods, in no particular order.
func (s *PodSet) GetMirrorPods() []*v1.Pod {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*v1.Pod, 0, len(s.mirrorByUID))
	for _, p := range s.mirrorByUID {
		out = append(out, p)
	}
	return out
}

var _ PodGetter = (*PodSet)(nil)
