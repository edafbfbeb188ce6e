package server

import (
	"fmt"
	"net/http"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// serveSummary answers /stats/summary with the Summary API's JSON, as
// upstream: GET or POST, only_cpu_and_memory=true in the query or a form
// body asking for the node's, pods' and containers' CPU and memory only
// (what metrics-server asks for).
func (s *Server) serveSummary(w http.ResponseWriter, r *http.Request) {
	if s.opts.Stats == nil {
		http.Error(w, "no stats provider", http.StatusServiceUnavailable)
		return
	}
	if err := r.ParseForm(); err != nil {
		s.log.Error("HTTP InternalServerError serving", "request", "/stats/summary", "err", err)
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("Internal Error: parse form failed: %v", err))
		return
	}
	v, found := r.Form["only_cpu_and_memory"]
	only := found && len(v) == 1 && v[0] == "true"
	summary, err := s.opts.Stats.Summary(r.Context(), only)
	if err == nil && summary == nil {
		summary = &statsv1alpha1.Summary{}
	}
	if err != nil {
		if errorStatus(err) == http.StatusNotFound {
			writeError(w, http.StatusNotFound, err.Error())
			return
		}
		s.log.Error("HTTP InternalServerError serving", "request", "/stats/summary", "err", err)
		writeError(w, http.StatusInternalServerError, fmt.Sprintf("Internal Error: %v", err))
		return
	}
	s.writeJSON(w, "/stats/summary", summary)
}

// serveRunningPods answers /runningpods/ with a v1.PodList of the pods the
// runtime runs.
func (s *Server) serveRunningPods(w http.ResponseWriter, r *http.Request) {
	if s.opts.RunningPods == nil {
		http.Error(w, "no running pod lister", http.StatusServiceUnavailable)
		return
	}
	pods, err := s.opts.RunningPods.RunningPods(r.Context())
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	list := v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: pods}
	s.writeCompactJSON(w, runningPodsPath, &list)
}
