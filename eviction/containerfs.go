package eviction

import "slices"

// ContainerFsThresholds returns ts with the containerfs thresholds that the
// node's disks call for, as upstream derives them once it knows the disks
// (KubeletSeparateDiskGC). The container filesystem is nodefs when the
// image filesystem is dedicated and the containers' writable layers are
// split from it, and also when everything is on one disk: its hard and soft
// thresholds, bytes and inodes, are copies of nodefs's. With a dedicated
// image filesystem that also holds the writable layers, they are copies of
// imagefs's. A configured containerfs threshold is not kept: it is replaced
// in place by its copy (or dropped when the source has none) and returned
// in ignored; copies with no configured counterpart are appended, hard
// bytes, soft bytes, hard inodes, soft inodes. A source threshold that does
// not exist gives no copy. When the writable layers are split from an image
// filesystem that is nodefs, a layout upstream does not handle, ts is
// returned as it is. ts is not changed; the copies share nothing with it.
func ContainerFsThresholds(ts []Threshold, dedicatedImageFs, splitContainerFs bool) (out, ignored []Threshold) {
	var bytesSrc, inodesSrc Signal
	switch {
	case dedicatedImageFs == splitContainerFs: // split onto nodefs, or one disk
		bytesSrc, inodesSrc = SignalNodeFsAvailable, SignalNodeFsInodesFree
	case dedicatedImageFs: // images and writable layers on their own disk
		bytesSrc, inodesSrc = SignalImageFsAvailable, SignalImageFsInodesFree
	default:
		return cloneThresholds(ts), nil
	}
	// The last threshold of a signal and kind wins, as upstream.
	type key struct {
		sig  Signal
		hard bool
	}
	src := map[key]Threshold{}
	for _, t := range ts {
		if t.Signal == bytesSrc || t.Signal == inodesSrc {
			src[key{t.Signal, t.IsHard()}] = t
		}
	}
	copyOf := func(sig, from Signal, hard bool) (Threshold, bool) {
		t, ok := src[key{from, hard}]
		if !ok {
			return Threshold{}, false
		}
		c := cloneThresholds([]Threshold{t})[0]
		c.Signal = sig
		return c, true
	}
	wanted := []fsCopy{
		{SignalContainerFsAvailable, bytesSrc, true},
		{SignalContainerFsAvailable, bytesSrc, false},
		{SignalContainerFsInodesFree, inodesSrc, true},
		{SignalContainerFsInodesFree, inodesSrc, false},
	}
	done := map[key]bool{}
	for _, t := range ts {
		if t.Signal != SignalContainerFsAvailable && t.Signal != SignalContainerFsInodesFree {
			out = append(out, cloneThresholds([]Threshold{t})[0])
			continue
		}
		ignored = append(ignored, cloneThresholds([]Threshold{t})[0])
		k := key{t.Signal, t.IsHard()}
		if done[k] {
			continue // a second one of the same kind: the copy is in place
		}
		done[k] = true
		i := slices.IndexFunc(wanted, func(w fsCopy) bool { return w.sig == k.sig && w.hard == k.hard })
		if c, ok := copyOf(k.sig, wanted[i].from, k.hard); ok {
			out = append(out, c)
		}
	}
	for _, w := range wanted {
		if done[key{w.sig, w.hard}] {
			continue
		}
		if c, ok := copyOf(w.sig, w.from, w.hard); ok {
			out = append(out, c)
		}
	}
	return out, ignored
}

// fsCopy is a containerfs threshold to derive: its signal, the signal it
// copies, hard or soft.
type fsCopy struct {
	sig, from Signal
	hard      bool
}
