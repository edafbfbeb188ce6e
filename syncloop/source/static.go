package source

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// StaticPodUID returns the UID upstream kubelet gives a pod read from a
// static source: the hex MD5 of the pod's JSON encoding (as
// validation.DefaultPod left it, before ApplyStaticDefaults changes its
// name) followed by
// "host:<nodeName>file:<location>" for SourceFile and "url:<location>" for
// any other source. Location is the manifest's path or the URL. So the same
// manifest at the same path on the same node always gets the same UID, and
// any change to it, or another node, gives another UID (for the HTTP
// source the node name is not part of the hash, as upstream).
func StaticPodUID(pod *v1.Pod, source, location, nodeName string) types.UID {
	h := md5.New()
	// Encoding a v1.Pod cannot fail: it has no channels, funcs or cycles.
	_ = json.NewEncoder(h).Encode(pod)
	if source == syncloop.SourceFile {
		fmt.Fprintf(h, "host:%s", nodeName)
		fmt.Fprintf(h, "file:%s", location)
	} else {
		fmt.Fprintf(h, "url:%s", location)
	}
	return types.UID(hex.EncodeToString(h.Sum(nil)))
}

// StaticPodName is the name a static pod runs under: its manifest's name,
// a dash and the node name in lower case ("web" on node "Edge-1" is
// "web-edge-1").
func StaticPodName(name, nodeName string) string {
	return name + "-" + strings.ToLower(nodeName)
}

// ApplyStaticDefaults makes pod, freshly decoded from a manifest of a
// static source (SourceFile or SourceHTTP) read from location (a path or a
// URL), into the pod a kubelet runs, as upstream's applyDefaults: unless it
// has one, a UID from StaticPodUID; the name suffixed with the node name
// (StaticPodName); namespace "default" when empty; spec.nodeName; the
// annotations kubernetes.io/config.hash (the UID) and
// kubernetes.io/config.source (source); for SourceFile a toleration of every
// NoExecute taint, so that the pod is not evicted for node problems; and
// phase Pending. Call validation.DefaultPod first: the UID hashes the
// defaulted pod.
func ApplyStaticDefaults(pod *v1.Pod, source, location, nodeName string) {
	if pod.UID == "" {
		pod.UID = StaticPodUID(pod, source, location, nodeName)
	}
	pod.Name = StaticPodName(pod.Name, nodeName)
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	pod.Spec.NodeName = nodeName
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[podspec.ConfigHashAnnotation] = string(pod.UID)
	pod.Annotations[podspec.ConfigSourceAnnotation] = source
	if source == syncloop.SourceFile {
		tolerateNoExecute(&pod.Spec)
	}
	pod.Status.Phase = v1.PodPending
}

// tolerateNoExecute adds the toleration {operator: Exists, effect:
// NoExecute}, or replaces one that matches it (same key, operator, value
// and effect) but differs, for instance by a tolerationSeconds.
func tolerateNoExecute(spec *v1.PodSpec) {
	want := v1.Toleration{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}
	for i, t := range spec.Tolerations {
		if t.Key == want.Key && t.Operator == want.Operator && t.Value == want.Value && t.Effect == want.Effect {
			if !equality.Semantic.DeepEqual(t, want) {
				spec.Tolerations[i] = want
			}
			return
		}
	}
	spec.Tolerations = append(spec.Tolerations, want)
}
