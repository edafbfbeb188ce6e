package source_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/syncloop"
)

// apiPod is a pod as an API server adapter would send it.
func apiPod(name string, mods ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1.36"}}},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func withUID(uid string) func(*v1.Pod) { return func(p *v1.Pod) { p.UID = types.UID(uid) } }
func withImage(img string) func(*v1.Pod) {
	return func(p *v1.Pod) { p.Spec.Containers[0].Image = img }
}
func withLabel(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}
func withAnnotation(k, v string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}
func withPhase(ph v1.PodPhase) func(*v1.Pod) { return func(p *v1.Pod) { p.Status.Phase = ph } }
func withDeletion(grace int64) func(*v1.Pod) {
	return func(p *v1.Pod) {
		t := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		p.DeletionTimestamp = &t
		p.DeletionGracePeriodSeconds = &grace
	}
}
func withNamespace(ns string) func(*v1.Pod) { return func(p *v1.Pod) { p.Namespace = ns } }

func pods(ps ...*v1.Pod) []*v1.Pod { return ps }

// describe formats updates as "OP source name,name" lines.
func describe(us []syncloop.PodUpdate) []string {
	out := []string{}
	for _, u := range us {
		out = append(out, describeOne(u))
	}
	return out
}

func describeOne(u syncloop.PodUpdate) string {
	var names []string
	for _, p := range u.Pods {
		names = append(names, p.Name)
	}
	return u.Op.String() + " " + u.Source + " " + strings.Join(names, ",")
}

// receive waits for one message on ch, failing the test after a deadline.
func receive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("nothing received within 10s")
	}
	var zero T
	return zero
}

// nothing asserts that ch has nothing ready now.
func nothing[T any](t *testing.T, ch <-chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("unexpected message %v", v)
	default:
	}
}

// eventually waits for a condition another goroutine makes true, such as a
// source parking on the fake clock. It yields between checks and never
// sleeps; the deadline only bounds a broken test.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}
