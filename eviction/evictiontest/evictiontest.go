package evictiontest

import (
	"context"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/eviction"
	"github.com/kubeletkit/kubeletkit/eviction/stats"
)

// Stats is a fake stats.Provider. The zero value reports an empty summary.
type Stats struct {
	mu    sync.Mutex
	s     stats.Summary
	err   error
	calls int
}

var _ stats.Provider = (*Stats)(nil)

// Set makes Get return a copy of s from now on.
func (f *Stats) Set(s stats.Summary) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.s = CloneSummary(s)
}

// Update changes the held summary in place under the fake's lock.
func (f *Stats) Update(fn func(s *stats.Summary)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(&f.s)
}

// SetError makes Get fail with err (nil restores success).
func (f *Stats) SetError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// Calls returns how many times Get was called.
func (f *Stats) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// Get returns a copy of the held summary, or the set error.
func (f *Stats) Get(context.Context) (*stats.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	s := CloneSummary(f.s)
	return &s, nil
}

// CloneSummary deep-copies s.
func CloneSummary(s stats.Summary) stats.Summary {
	out := s
	out.Node.Memory = clonePtr(s.Node.Memory)
	out.Node.AllocatableMemory = clonePtr(s.Node.AllocatableMemory)
	out.Node.Fs = clonePtr(s.Node.Fs)
	out.Node.ImageFs = clonePtr(s.Node.ImageFs)
	out.Node.ContainerFs = clonePtr(s.Node.ContainerFs)
	out.Node.Rlimit = clonePtr(s.Node.Rlimit)
	out.Pods = slices.Clone(s.Pods)
	for i := range out.Pods {
		p := &out.Pods[i]
		p.Memory = clonePtr(p.Memory)
		p.ProcessCount = clonePtr(p.ProcessCount)
		p.Volumes = slices.Clone(p.Volumes)
		p.Containers = slices.Clone(p.Containers)
		for j := range p.Containers {
			c := &p.Containers[j]
			c.Memory, c.Rootfs, c.Logs = clonePtr(c.Memory), clonePtr(c.Rootfs), clonePtr(c.Logs)
		}
	}
	return out
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// Kill is one recorded KillPodForEviction call.
type Kill struct {
	UID         types.UID
	Name        string
	Status      v1.PodStatus
	GracePeriod *int64
}

// Killer is a fake eviction.PodKiller that records kills. Err, when set
// before use, is returned by every kill.
type Killer struct {
	Err   error
	mu    sync.Mutex
	kills []Kill
}

var _ eviction.PodKiller = (*Killer)(nil)

// KillPodForEviction records the kill and returns k.Err.
func (k *Killer) KillPodForEviction(_ context.Context, pod *v1.Pod, status v1.PodStatus, grace *int64) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	var g *int64
	if grace != nil {
		v := *grace
		g = &v
	}
	k.kills = append(k.kills, Kill{UID: pod.UID, Name: pod.Name, Status: *status.DeepCopy(), GracePeriod: g})
	return k.Err
}

// Kills returns the kills so far, oldest first.
func (k *Killer) Kills() []Kill {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.kills)
}

// GC is a fake image and container garbage collector that counts its calls
// and runs OnImages / OnContainers (set before use) on each.
type GC struct {
	OnImages     func(ctx context.Context) error
	OnContainers func(ctx context.Context) error
	mu           sync.Mutex
	calls        []string
}

var (
	_ eviction.ImageGarbageCollector     = (*GC)(nil)
	_ eviction.ContainerGarbageCollector = (*GC)(nil)
)

// DeleteUnusedImages records "images" and runs OnImages.
func (g *GC) DeleteUnusedImages(ctx context.Context) error {
	g.record("images")
	if g.OnImages != nil {
		return g.OnImages(ctx)
	}
	return nil
}

// DeleteAllUnusedContainers records "containers" and runs OnContainers.
func (g *GC) DeleteAllUnusedContainers(ctx context.Context) error {
	g.record("containers")
	if g.OnContainers != nil {
		return g.OnContainers(ctx)
	}
	return nil
}

func (g *GC) record(s string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.calls = append(g.calls, s)
}

// Calls returns "images" and "containers" in call order.
func (g *GC) Calls() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.calls)
}
