package eventtest_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/internal/eventtest"
)

// A block under test emits events through a Recorder; the test reads them
// back as strings, or takes their reasons and starts afresh.
func Example() {
	var rec eventtest.Recorder // the zero value is ready
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}

	rec.Eventf(pod, corev1.EventTypeNormal, "Pulled", "Container image %q already present on machine", "busybox:1.36")
	rec.Eventf(pod, corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s", "app")

	for _, s := range rec.Strings() {
		fmt.Println(s)
	}
	fmt.Println(rec.TakeReasons())
	fmt.Println(len(rec.Events()), "events left")
	// Output:
	// Normal Pulled Container image "busybox:1.36" already present on machine
	// Warning BackOff Back-off restarting failed container app
	// [Pulled BackOff]
	// 0 events left
}
