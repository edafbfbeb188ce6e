package podsync_test

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

func TestRuntimeClassLookup(t *testing.T) {
	classes := containerconfig.RuntimeClassesFunc(func(name string) (*nodev1.RuntimeClass, error) {
		if name != "kata" {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: "node.k8s.io", Resource: "runtimeclasses"}, name)
		}
		return &nodev1.RuntimeClass{Handler: "kata-qemu",
			Overhead: &nodev1.Overhead{PodFixed: v1.ResourceList{v1.ResourceMemory: resource.MustParse("120Mi")}}}, nil
	})
	for _, tc := range []struct {
		name, class, wantHandler string
		classes                  containerconfig.RuntimeClasses
		wantErr                  bool
	}{
		{name: "no class", wantHandler: ""},
		{name: "class looked up", class: "kata", classes: classes, wantHandler: "kata-qemu"},
		{name: "class missing", class: "gvisor", classes: classes, wantErr: true},
		{name: "no lookup: the name passes through", class: "gvisor", wantHandler: "gvisor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := fake.New(fake.Options{})
			s, err := podsync.New(podsync.Options{Runtime: rt, Config: containerconfig.Options{RuntimeClasses: tc.classes}})
			if err != nil {
				t.Fatal(err)
			}
			p := &v1.Pod{}
			p.Name, p.Namespace, p.UID = "p", "default", "u1"
			p.Spec.Containers = []v1.Container{{Name: "c", Image: "busybox"}}
			if tc.class != "" {
				p.Spec.RuntimeClassName = &tc.class
			}
			res := s.SyncPod(context.Background(), p, nil)
			if tc.wantErr {
				if res.Err() == nil || !apierrors.IsNotFound(res.Err()) {
					t.Fatalf("SyncPod: %v, want not found", res.Err())
				}
				return
			}
			sbs, err := rt.ListPodSandbox(context.Background(), nil)
			if err != nil || len(sbs) != 1 {
				t.Fatalf("sandboxes %v, %v", sbs, err)
			}
			if got := sbs[0].GetRuntimeHandler(); got != tc.wantHandler {
				t.Errorf("handler %q, want %q", got, tc.wantHandler)
			}
		})
	}
	kata := "kata"
	p := &v1.Pod{}
	p.Spec.RuntimeClassName = &kata
	if o := podsync.WithOverhead(p, classes).Spec.Overhead; o.Memory().String() != "120Mi" || p.Spec.Overhead != nil {
		t.Errorf("overhead %v (pod's own %v)", o, p.Spec.Overhead)
	}
	p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	if got := podsync.PodOverhead(p, classes); !got.Cpu().Equal(resource.MustParse("1")) || got.Memory().Value() != 0 {
		t.Errorf("the pod's own overhead was not kept: %v", got)
	}
}
