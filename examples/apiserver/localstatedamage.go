package apiserver

import (
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/localstate"
)

// EventLocalStateDamaged is the reason of the Warning event Joined.Run
// records on the node when its local state's file was found damaged as it
// was opened (localstate.Bolt.Recovered): moved aside, the node starting
// without it, or read from its other meta page.
const EventLocalStateDamaged = "LocalStateDamaged"

// recoverer is a local state's store that tells what it did about a
// damaged file.
type recoverer interface {
	Recovered() (localstate.Recovery, bool)
}

var _ recoverer = (*localstate.Bolt)(nil)

// recordLocalStateDamage records EventLocalStateDamaged on the node when
// the local state's store says its file was damaged.
func (j *Joined) recordLocalStateDamage() {
	if j.state == nil {
		return
	}
	r, ok := j.state.Store().(recoverer)
	if !ok {
		return
	}
	rec, ok := r.Recovered()
	if !ok {
		return
	}
	msg := rec.String()
	if len(msg) > 1000 {
		msg = msg[:1000] + "…"
	}
	j.recorder.Eventf(&v1.ObjectReference{Kind: "Node", Name: j.nodeName}, v1.EventTypeWarning, EventLocalStateDamaged, "%s", msg)
}
