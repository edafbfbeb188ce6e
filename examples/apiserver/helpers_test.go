package apiserver_test

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

// fastRetry retries at once (microseconds), so retry tests stay fast
// without depending on timing.
var fastRetry = apiserver.Retry{Attempts: 4, Base: time.Microsecond, Max: time.Microsecond}

func apiPod(ns, name string, uid types.UID, node string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid},
		Spec:       v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Image: "busybox"}}},
	}
}

func staticPod(ns, name, hash, node string) *v1.Pod {
	p := apiPod(ns, name, types.UID(hash), node)
	p.Annotations = map[string]string{
		podspec.ConfigSourceAnnotation: syncloop.SourceFile,
		podspec.ConfigHashAnnotation:   hash,
	}
	return p
}

func mirrorPod(ns, name, hash string, uid types.UID, node string) *v1.Pod {
	p := apiPod(ns, name, uid, node)
	p.Annotations = map[string]string{
		podspec.ConfigSourceAnnotation: syncloop.SourceFile,
		podspec.ConfigHashAnnotation:   hash,
		podspec.ConfigMirrorAnnotation: hash,
	}
	return p
}

// count counts the actions of verb on resource (and subresource).
func count(actions []k8stesting.Action, verb, resource, sub string) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == sub {
			n++
		}
	}
	return n
}
