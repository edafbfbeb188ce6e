package imagegc_test

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/imagegc"
)

// Under disk pressure the eviction manager asks for every unused image to
// go; a MinAge of 0 lets images just seen go too.
func Example() {
	rt := fake.New(fake.Options{Images: []string{"busybox:1.36", "nginx:1.27"}})
	defer rt.Close()
	ctx := context.Background()
	sb, _ := rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "u1"}}, "")
	_, _ = rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "web"}, Image: &runtimeapi.ImageSpec{Image: "nginx:1.27"},
	}, nil)

	gc, err := imagegc.New(imagegc.Options{Runtime: rt, Policy: imagegc.Policy{HighThresholdPercent: 85, LowThresholdPercent: 80}})
	if err != nil {
		panic(err)
	}
	if err := gc.DeleteUnusedImages(ctx); err != nil {
		panic(err)
	}
	images, _ := rt.ListImages(ctx, nil)
	for _, img := range images {
		fmt.Println(img.RepoTags)
	}
	// Output:
	// [docker.io/library/nginx:1.27]
}
