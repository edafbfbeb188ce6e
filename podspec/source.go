package podspec

import v1 "k8s.io/api/core/v1"

// The annotations a kubelet's pod sources put on the pods they read, and
// the name of the API server's source, with upstream's keys and values.
const (
	// ConfigSourceAnnotation names the source a pod came from: SourceAPI,
	// "file" or "http".
	ConfigSourceAnnotation = "kubernetes.io/config.source"
	// ConfigMirrorAnnotation marks a mirror pod: the API server's copy of
	// a static pod. Its value is the static pod's hash.
	ConfigMirrorAnnotation = "kubernetes.io/config.mirror"
	// ConfigHashAnnotation holds the hash a static pod's UID was made from.
	ConfigHashAnnotation = "kubernetes.io/config.hash"
	// ConfigSeenAnnotation holds the time (RFC 3339, nanoseconds) the
	// kubelet first saw the pod.
	ConfigSeenAnnotation = "kubernetes.io/config.seen"
	// SourceAPI is the ConfigSourceAnnotation of the API server's pods.
	SourceAPI = "api"
)

// IsStatic reports whether pod came from a source other than the API
// server (a manifest file or URL): a static pod, which the kubelet runs
// whatever the API server says, never evicts or preempts, and mirrors to
// the API server. A nil pod is not.
func IsStatic(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	src, ok := pod.Annotations[ConfigSourceAnnotation]
	return ok && src != SourceAPI
}

// IsMirror reports whether pod is a mirror pod: the API server's copy of a
// static pod, which a kubelet reports on but never runs. A nil pod is not.
func IsMirror(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	_, ok := pod.Annotations[ConfigMirrorAnnotation]
	return ok
}

// FullName is the pod's "name_namespace", the key upstream kubelet gives a
// pod across UIDs (a static pod keeps it when its manifest changes, and its
// mirror pod shares it).
func FullName(pod *v1.Pod) string {
	return pod.Name + "_" + pod.Namespace
}
