package agent

import (
	"context"
	"log/slog"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// runtimeFeatures asks the runtime what it supports, each time it is asked:
// the handlers' recursive read-only mounts and user namespaces, and
// supplementalGroupsPolicy Strict.
type runtimeFeatures struct {
	rt  cri.StatusReporter
	log *slog.Logger
}

// runtimeStatus asks the runtime for its status, bounded by five seconds;
// nil (logged, with what takes its place) when it does not answer.
func (a runtimeFeatures) runtimeStatus(what string) *runtimeapi.StatusResponse {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := a.rt.Status(ctx, false)
	if err != nil {
		a.log.Warn("Cannot read the runtime's status: "+what+" taken as unsupported", "err", err)
		return nil
	}
	return st
}

// handlerFeatures returns the features the runtime's status reports for a
// handler; nil when it reports none, or does not answer.
func (a runtimeFeatures) handlerFeatures(handler, what string) *runtimeapi.RuntimeHandlerFeatures {
	for _, h := range a.runtimeStatus(what).GetRuntimeHandlers() {
		if h.GetName() == handler {
			return h.GetFeatures()
		}
	}
	return nil
}

// handlerSupportsRecursiveReadOnly asks the runtime whether a handler makes
// read-only mounts recursively read-only (its status's handler features). A
// runtime that does not say, or does not answer within five seconds, does
// not: a mount that needs it is then refused, never made weaker.
func (a runtimeFeatures) handlerSupportsRecursiveReadOnly(handler string) bool {
	return a.handlerFeatures(handler, "recursive read-only mounts").GetRecursiveReadOnlyMounts()
}

// handlerSupportsUserNamespaces asks the runtime whether a handler runs
// pods in user namespaces of their own (its status's handler features), as
// upstream asks before it gives a pod with hostUsers: false one. A runtime
// that does not say, or does not answer, does not: the pod's sandbox is
// then refused, never run in the host's user namespace.
func (a runtimeFeatures) handlerSupportsUserNamespaces(handler string) bool {
	return a.handlerFeatures(handler, "user namespaces").GetUserNamespaces()
}

// supplementalGroupsPolicy tells whether the runtime's status reports the
// SupplementalGroupsPolicy feature (upstream's node status
// features.supplementalGroupsPolicy); no answer means no.
func (a runtimeFeatures) supplementalGroupsPolicy() bool {
	return a.runtimeStatus("supplementalGroupsPolicy Strict").GetFeatures().GetSupplementalGroupsPolicy()
}
