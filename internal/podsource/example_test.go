package podsource_test

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/internal/podsource"
)

func Example() {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{podsource.SourceAnnotation: "file"}}}
	fmt.Println(podsource.IsStatic(pod), podsource.IsMirror(pod))
	// Output: true false
}
