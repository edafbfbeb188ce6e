package podsource

import v1 "k8s.io/api/core/v1"

// Upstream's annotations and source name.
const (
	// SourceAnnotation names the source a pod came from: "api", "file" or
	// "http".
	SourceAnnotation = "kubernetes.io/config.source"
	// MirrorAnnotation marks a mirror pod.
	MirrorAnnotation = "kubernetes.io/config.mirror"
	// APIServer is the source name of the API server's pods.
	APIServer = "api"
)

// IsStatic reports whether pod came from a source other than the API
// server (a manifest file or URL). A nil pod is not.
func IsStatic(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	src, ok := pod.Annotations[SourceAnnotation]
	return ok && src != APIServer
}

// IsMirror reports whether pod is a mirror pod. A nil pod is not.
func IsMirror(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	_, ok := pod.Annotations[MirrorAnnotation]
	return ok
}
