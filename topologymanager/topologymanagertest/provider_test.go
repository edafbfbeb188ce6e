package topologymanagertest

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/topologymanager"
)

type storeFunc func(types.UID, string) topologymanager.Hint

func (f storeFunc) Affinity(u types.UID, c string) topologymanager.Hint { return f(u, c) }

func TestProvider(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "p1"}}
	c := &v1.Container{Name: "c1"}
	var seen []string
	p := &Provider{
		Name: "cpu",
		Store: storeFunc(func(types.UID, string) topologymanager.Hint {
			return topologymanager.Hint{NUMANodes: 1, Preferred: true}
		}),
		ContainerHintsFunc: func(*v1.Pod, *v1.Container) map[string][]topologymanager.Hint {
			return map[string][]topologymanager.Hint{"cpu": nil}
		},
		AllocateFunc: func(*v1.Pod, *v1.Container) error { return errors.New("boom") },
		OnCall:       func(c Call) { seen = append(seen, c.String()) },
	}
	require.Equal(t, map[string][]topologymanager.Hint{"cpu": nil}, p.ContainerHints(pod, c))
	require.Nil(t, p.PodHints(pod))
	require.EqualError(t, p.Allocate(pod, c), "boom")
	want := []string{"cpu ContainerHints p1/c1", "cpu PodHints p1", "cpu Allocate p1/c1 {0} preferred error: boom"}
	require.Equal(t, want, seen)
	require.Len(t, p.Calls(), 3)
}
