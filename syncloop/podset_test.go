package syncloop_test

import (
	"fmt"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/syncloop"
)

func podWith(name, uid string, annotations map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "kube-system", UID: types.UID(uid), Annotations: annotations}}
}

func sortedNames(pods []*v1.Pod) []string {
	var s []string
	for _, p := range pods {
		s = append(s, p.Name+"/"+string(p.UID))
	}
	sort.Strings(s)
	return s
}

func TestPodSet(t *testing.T) {
	static := map[string]string{podspec.ConfigSourceAnnotation: syncloop.SourceFile}
	mirror := map[string]string{podspec.ConfigSourceAnnotation: syncloop.SourceAPI, podspec.ConfigMirrorAnnotation: "hash"}

	s := syncloop.NewPodSet()
	s.Set([]*v1.Pod{podWith("web", "u1", nil), podWith("etcd", "s1", static), podWith("etcd", "m1", mirror)})
	assert.Equal(t, []string{"etcd/s1", "web/u1"}, sortedNames(s.GetPods()), "mirror pods are kept apart")
	assert.Equal(t, []string{"etcd/m1"}, sortedNames(s.GetMirrorPods()))
	assert.Equal(t, 2, s.Len())

	p, ok := s.GetPodByFullName("etcd_kube-system")
	assert.True(t, ok)
	assert.Equal(t, types.UID("s1"), p.UID)
	_, ok = s.GetPodByUID("m1")
	assert.False(t, ok, "a mirror pod is not a desired pod")
	m, ok := s.GetMirrorPodByPod(p)
	assert.True(t, ok)
	assert.Equal(t, types.UID("m1"), m.UID)
	back, ok := s.GetPodByMirrorPod(m)
	assert.True(t, ok)
	assert.Same(t, p, back)

	// A changed manifest gives the static pod a new UID under the same
	// full name; removing the old UID must not drop the new one's name.
	s.Add(podWith("etcd", "s2", static))
	s.Remove(podWith("etcd", "s1", static))
	p, ok = s.GetPodByFullName("etcd_kube-system")
	assert.True(t, ok)
	assert.Equal(t, types.UID("s2"), p.UID)
	_, ok = s.GetPodByUID("s1")
	assert.False(t, ok)

	// A rename under the same UID moves the full-name entry.
	s.Update(podWith("web2", "u1", nil))
	_, ok = s.GetPodByFullName("web_kube-system")
	assert.False(t, ok)
	_, ok = s.GetPodByFullName("web2_kube-system")
	assert.True(t, ok)

	// Removing an unknown pod is a no-op; removing the mirror drops it.
	s.Remove(podWith("nope", "x", nil))
	s.Remove(podWith("etcd", "m1", mirror))
	assert.Empty(t, s.GetMirrorPods())
	assert.Equal(t, []string{"etcd/s2", "web2/u1"}, sortedNames(s.GetPods()))

	s.Set(nil)
	assert.Zero(t, s.Len())
}

func TestIsStaticPod(t *testing.T) {
	tests := []struct {
		source string
		set    bool
		want   bool
	}{
		{syncloop.SourceFile, true, true},
		{syncloop.SourceHTTP, true, true},
		{syncloop.SourceAPI, true, false},
		{"", false, false},
	}
	for _, tt := range tests {
		p := podWith("p", "u", nil)
		if tt.set {
			p.Annotations = map[string]string{podspec.ConfigSourceAnnotation: tt.source}
		}
		assert.Equal(t, tt.want, podspec.IsStatic(p), "source %q", tt.source)
	}
	assert.Equal(t, "p_kube-system", podspec.FullName(podWith("p", "u", nil)))
}

func TestPodSetConcurrentUse(t *testing.T) {
	s := syncloop.NewPodSet()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				p := podWith(fmt.Sprintf("p%d-%d", w, i), fmt.Sprintf("u%d-%d", w, i), nil)
				s.Add(p)
				s.GetPodByUID(p.UID)
				s.GetPods()
				if i%2 == 0 {
					s.Remove(p)
				}
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 400, s.Len())
}
