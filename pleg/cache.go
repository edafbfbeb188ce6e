package pleg

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/cri"
)

// tombstoneTTL is how long, in cache time, a deleted pod's entry keeps
// refusing writes older than its deletion. Event streams deliver late by
// milliseconds; a minute is generous and keeps the tombstones few.
const tombstoneTTL = time.Minute

// Cache holds the newest known runtime status of every pod, as the PLEGs
// observed it, and lets pod workers wait for a status newer than their last
// sync. It is upstream's pod cache with three changes: a write older than the
// stored status is refused (always, not only with evented PLEG), a deleted pod
// keeps a short tombstone so a late write cannot bring it back, and
// GetNewerThan takes a context.
//
// Every status is stamped with a time: the runtime's state at that time or
// later is what it shows. The cache also has a global timestamp, set by
// UpdateTime after a relist: every pod's entry is at least that fresh, even
// when its own stamp is older (the relist saw that nothing changed).
//
// A Cache is safe for concurrent use. The statuses it returns are shared:
// treat them as read-only.
type Cache struct {
	mu      sync.Mutex
	pods    map[types.UID]*cacheEntry
	tombs   []types.UID // deleted pods, in deletion order, for pruning
	global  time.Time   // zero until the first UpdateTime
	waiters map[types.UID][]*cacheWaiter
	// waited is signalled (capacity 1) when a waiter registers, for the
	// evented PLEG, which inspects the pods that are waited on.
	waited chan struct{}
}

type cacheEntry struct {
	status   *cri.PodStatus
	err      error
	modified time.Time
	deleted  bool
}

type cacheWaiter struct {
	min  time.Time
	done chan struct{}
}

// NewCache returns an empty cache whose global timestamp is not yet set:
// GetNewerThan blocks until the first relist (or a write) makes a status
// newer than asked.
func NewCache() *Cache {
	return &Cache{
		pods:    make(map[types.UID]*cacheEntry),
		waiters: make(map[types.UID][]*cacheWaiter),
		waited:  make(chan struct{}, 1),
	}
}

// Get returns the pod's status and the error of the inspection that produced
// it. A pod the cache knows nothing of (the runtime has nothing for it, or it
// was deleted) gets an empty status carrying only its UID, as upstream does.
func (c *Cache) Get(uid types.UID) (*cri.PodStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.get(uid)
}

func (c *Cache) get(uid types.UID) (*cri.PodStatus, error) {
	e := c.pods[uid]
	if e == nil || e.deleted {
		return &cri.PodStatus{UID: uid}, nil
	}
	return e.status, e.err
}

// Set stores the pod's status, or the error that kept the PLEG from
// inspecting the pod (then status may be nil), stamped with ts. A write older
// than what the cache holds for the pod (its status, or its deletion) is
// refused and Set returns false: a late or repeated event cannot make a pod
// look older than it is. A write as old as the stored status replaces it.
func (c *Cache) Set(uid types.UID, status *cri.PodStatus, err error, ts time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.pods[uid]
	if e == nil {
		e = &cacheEntry{}
		c.pods[uid] = e
	} else if ts.Before(e.modified) || (e.deleted && !ts.After(e.modified)) {
		return false
	}
	*e = cacheEntry{status: status, err: err, modified: ts} // entries are never handed out: rewritten in place
	c.notify(uid, ts)
	return true
}

// Delete forgets the pod, as of ts: the runtime has nothing for it any more.
// A deletion older than the stored status is refused (false). The pod keeps a
// tombstone for a while (one minute of cache time) so that writes older than
// the deletion are refused too. Waiters for a status newer than a time before
// ts get the empty status.
func (c *Cache) Delete(uid types.UID, ts time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.pods[uid]
	if e != nil && ts.Before(e.modified) {
		return false
	}
	if e == nil || !e.deleted {
		c.tombs = append(c.tombs, uid)
	}
	if e == nil {
		e = &cacheEntry{}
		c.pods[uid] = e
	}
	*e = cacheEntry{modified: ts, deleted: true}
	c.notify(uid, ts)
	return true
}

// UpdateTime sets the global timestamp: every pod's entry is now known to be
// current as of ts. The PLEG calls it after a relist (see Generic). An older
// ts than the current one is ignored. Waiters for a status newer than a time
// before ts wake up.
func (c *Cache) UpdateTime(ts time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !ts.After(c.global) {
		return
	}
	c.global = ts
	c.pruneTombstones()
	for uid := range c.waiters {
		c.notify(uid, ts)
	}
}

// Time returns the global timestamp; zero until the first UpdateTime.
func (c *Cache) Time() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.global
}

// GetNewerThan waits until the cache holds a status of the pod newer than t
// (stamped after t, or covered by a global timestamp after t), and returns it
// as Get would. It returns early with an error wrapping ctx.Err() when ctx
// ends; upstream's waits forever. "Newer" is strict: a status stamped exactly
// t does not do, since it may predate what the caller did at t.
func (c *Cache) GetNewerThan(ctx context.Context, uid types.UID, t time.Time) (*cri.PodStatus, error) {
	c.mu.Lock()
	if c.newerThan(uid, t) {
		defer c.mu.Unlock()
		return c.get(uid)
	}
	w := &cacheWaiter{min: t, done: make(chan struct{})}
	c.waiters[uid] = append(c.waiters[uid], w)
	c.mu.Unlock()
	select {
	case c.waited <- struct{}{}:
	default:
	}

	select {
	case <-w.done:
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.get(uid)
	case <-ctx.Done():
		c.mu.Lock()
		c.removeWaiter(uid, w)
		c.mu.Unlock()
		return nil, fmt.Errorf("wait for status of pod %s newer than %s: %w", uid, t.Format(time.RFC3339Nano), ctx.Err())
	}
}

func (c *Cache) newerThan(uid types.UID, t time.Time) bool {
	if c.global.After(t) {
		return true
	}
	e := c.pods[uid]
	return e != nil && e.modified.After(t)
}

// notify wakes the pod's waiters that ts satisfies. Callers hold mu.
func (c *Cache) notify(uid types.UID, ts time.Time) {
	ws := c.waiters[uid]
	if len(ws) == 0 {
		return
	}
	kept := ws[:0]
	for _, w := range ws {
		if ts.After(w.min) {
			close(w.done)
		} else {
			kept = append(kept, w)
		}
	}
	clear(ws[len(kept):])
	if len(kept) == 0 {
		delete(c.waiters, uid)
	} else {
		c.waiters[uid] = kept
	}
}

func (c *Cache) removeWaiter(uid types.UID, w *cacheWaiter) {
	ws := c.waiters[uid]
	if i := slices.Index(ws, w); i >= 0 {
		ws = slices.Delete(ws, i, i+1)
	}
	if len(ws) == 0 {
		delete(c.waiters, uid)
	} else {
		c.waiters[uid] = ws
	}
}

// pruneTombstones drops tombstones that the global timestamp has passed by
// tombstoneTTL. Callers hold mu.
func (c *Cache) pruneTombstones() {
	n := 0
	for _, uid := range c.tombs {
		e := c.pods[uid]
		if e == nil || !e.deleted {
			n++ // resurrected by a newer write: not a tombstone any more
			continue
		}
		if c.global.Sub(e.modified) < tombstoneTTL {
			break
		}
		delete(c.pods, uid)
		n++
	}
	if n > 0 {
		c.tombs = slices.Delete(c.tombs, 0, n)
	}
}

// waitedOn returns the pods that someone waits on with a minimum time before
// now, sorted. The evented PLEG inspects them.
func (c *Cache) waitedOn(now time.Time) []types.UID {
	c.mu.Lock()
	defer c.mu.Unlock()
	var uids []types.UID
	for uid, ws := range c.waiters {
		for _, w := range ws {
			if now.After(w.min) {
				uids = append(uids, uid)
				break
			}
		}
	}
	slices.Sort(uids)
	return uids
}

// podRef returns the name and namespace of the pod as last seen.
func (c *Cache) podRef(uid types.UID) (name, namespace string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.pods[uid]; e != nil && e.status != nil {
		return e.status.Name, e.status.Namespace
	}
	return "", ""
}
