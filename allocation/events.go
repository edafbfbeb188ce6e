package allocation

import (
	"encoding/json"

	v1 "k8s.io/api/core/v1"
)

// eventMessage is upstream's message of a resize event: prefix, then the
// pod's containers' resources and generation as JSON, with errMsg when
// there is one.
func eventMessage(pod *v1.Pod, prefix, errMsg string, generation int64) string {
	type named struct {
		Name      string                  `json:"name"`
		Resources v1.ResourceRequirements `json:"resources,omitempty"`
	}
	summary := struct {
		InitContainers []named `json:"initContainers,omitempty"`
		Containers     []named `json:"containers,omitempty"`
		Generation     int64   `json:"generation"`
		Error          string  `json:"error,omitempty"`
	}{Generation: generation, Error: errMsg}
	for _, c := range pod.Spec.InitContainers {
		summary.InitContainers = append(summary.InitContainers, named{c.Name, c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		summary.Containers = append(summary.Containers, named{c.Name, c.Resources})
	}
	b, err := json.Marshal(summary)
	if err != nil {
		return prefix
	}
	return prefix + ": " + string(b)
}
