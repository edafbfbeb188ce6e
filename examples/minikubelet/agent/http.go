package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// handler serves the agent's read-only HTTP endpoints:
//
//	/healthz  "ok" while the PLEG relists in time and the sync loop is not
//	          stuck, else 500 with the reasons
//	/pods     a v1.PodList of the desired pods with their live statuses, as
//	          upstream's read-only /pods
//	/node     a v1.Node with the node's status: conditions (Ready,
//	          MemoryPressure, DiskPressure, PIDPressure), capacity, addresses
//	/metrics  Prometheus text format, upstream metric names where they exist
func (a *Agent) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", a.serveHealthz)
	mux.HandleFunc("GET /pods", a.servePods)
	mux.HandleFunc("GET /node", a.serveNode)
	mux.HandleFunc("GET /metrics", a.serveMetrics)
	return mux
}

func (a *Agent) serveHealthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	var failed []string
	if ok, err := a.pleg.Healthy(); !ok {
		failed = append(failed, fmt.Sprintf("[-]pleg failed: %v", err))
	}
	if err := a.loop.Healthy(); err != nil {
		failed = append(failed, fmt.Sprintf("[-]syncloop failed: %v", err))
	}
	if len(failed) > 0 {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintln(w, strings.Join(failed, "\n"))
		return
	}
	fmt.Fprintln(w, "ok")
}

func (a *Agent) servePods(w http.ResponseWriter, _ *http.Request) {
	list := v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: a.PodStatuses()}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&list); err != nil {
		a.log.Warn("Failed to write /pods", "err", err)
	}
}

func (a *Agent) serveMetrics(w http.ResponseWriter, r *http.Request) {
	s := snapshot{runningContainers: map[string]int{}, pods: map[string]int{}}
	s.healthy, _ = a.pleg.Healthy()
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if sbs, err := a.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}}); err == nil {
		s.runningPods = len(sbs)
	}
	if cs, err := a.rt.ListContainers(ctx, nil); err == nil {
		for _, c := range cs {
			s.runningContainers[containerState(c.GetState())]++
		}
	}
	for _, p := range a.PodStatuses() {
		phase := string(p.Status.Phase)
		if phase == "" {
			phase = string(v1.PodPending)
		}
		s.pods[phase]++
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	a.metrics.write(w, s)
}

// containerState names a CRI state as upstream's container_state label.
func containerState(s runtimeapi.ContainerState) string {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return "created"
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return "running"
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return "exited"
	default:
		return "unknown"
	}
}
