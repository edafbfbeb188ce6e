package agent

import (
	"context"
	"time"
)

// handlerSupportsRecursiveReadOnly asks the runtime whether a handler makes
// read-only mounts recursively read-only (its status's handler features). A
// runtime that does not say, or does not answer within five seconds, does
// not: a mount that needs it is then refused, never made weaker.
func (a *Agent) handlerSupportsRecursiveReadOnly(handler string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := a.rt.Status(ctx, false)
	if err != nil {
		a.log.Warn("Cannot read the runtime's handlers: recursive read-only mounts taken as unsupported", "err", err)
		return false
	}
	for _, h := range st.GetRuntimeHandlers() {
		if h.GetName() == handler {
			return h.GetFeatures().GetRecursiveReadOnlyMounts()
		}
	}
	return false
}
