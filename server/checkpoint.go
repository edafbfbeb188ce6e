package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// serveCheckpoint answers POST /checkpoint/{namespace}/{pod}/{container}
// as upstream's kubelet does: 404 "pod does not exist" or "container NAME
// does not exist" (a container of the pod's spec: app, init or
// ephemeral), 404 "cannot parse value of timeout parameter" for a timeout
// that is not a number (the last of several counts), 500 "checkpointing of
// NAMESPACE/POD/CONTAINER failed (ERROR)" when the runtime fails, and 200
// {"items":["PATH"]} with the archive's path on the node.
func (s *Server) serveCheckpoint(w http.ResponseWriter, r *http.Request) {
	if s.opts.Checkpoints == nil {
		http.NotFound(w, r)
		return
	}
	p, ok := parsePath(w, r, checkpointPath, containerShape)
	if !ok {
		return
	}
	if p.uid != "" {
		// Upstream's route has no UID segment.
		http.NotFound(w, r)
		return
	}
	pod := s.lookupPod(w, p, containerShape)
	if pod == nil {
		return
	}
	if !hasContainer(pod, p.container) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("container %v does not exist", p.container))
		return
	}
	var timeout int64
	if ts := r.URL.Query()["timeout"]; len(ts) > 0 {
		t, err := strconv.ParseInt(ts[len(ts)-1], 10, 64)
		if err != nil {
			writeError(w, http.StatusNotFound, "cannot parse value of timeout parameter")
			return
		}
		timeout = t
	}
	path, err := s.opts.Checkpoints.CheckpointContainer(r.Context(), pod, p.container, timeout)
	if err != nil {
		s.log.Info("Checkpointing a container failed", "pod", p.namespace+"/"+p.pod, "container", p.container, "err", err)
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("checkpointing of %v/%v/%v failed (%v)", p.namespace, p.pod, p.container, err))
		return
	}
	body, err := json.Marshal(struct {
		Items []string `json:"items"`
	}{Items: []string{path}})
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(body); err != nil {
		s.log.Warn("Failed to write a response", "path", checkpointPath, "err", err)
	}
}
