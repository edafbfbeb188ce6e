package agent

import (
	"time"

	"github.com/kubeletkit/kubeletkit/pleg"
	"github.com/kubeletkit/kubeletkit/podworkers"
)

// noMetrics is the Metrics of an agent given none.
type noMetrics struct{}

var _ Metrics = noMetrics{}

func (noMetrics) RelistDuration(time.Duration)                          {}
func (noMetrics) RelistInterval(time.Duration)                          {}
func (noMetrics) LastSeen(time.Time)                                    {}
func (noMetrics) EventsCoalesced(int)                                   {}
func (noMetrics) StreamState(pleg.StreamState)                          {}
func (noMetrics) ObserveWork(podworkers.WorkKind, time.Duration, error) {}
func (noMetrics) PodStartDuration(time.Duration)                        {}
func (noMetrics) Event(string, string)                                  {}
