package imagegc_test

import (
	"context"
	"fmt"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/imagegc"
)

// BenchmarkDeleteUnusedImages measures a pass on a node of N pods, one
// container each, using N/10 images (at least 10), with 10 more images
// unused but too young to go: the cost is the detection (listing images and
// containers, matching them) and the ranking, as under disk pressure.
func BenchmarkDeleteUnusedImages(b *testing.B) {
	for _, pods := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			rt := fake.New(fake.Options{})
			defer rt.Close()
			ctx := context.Background()
			nImages := max(pods/10, 10)
			for i := range nImages + 10 {
				if err := rt.AddImage(&runtimeapi.Image{Id: fmt.Sprintf("sha256:%064d", i), RepoTags: []string{fmt.Sprintf("example.com/app%d:1", i)}, Size: 1 << 20}); err != nil {
					b.Fatal(err)
				}
			}
			for i := range pods {
				sb, err := rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{
					Name: fmt.Sprintf("p%d", i), Namespace: "default", Uid: fmt.Sprintf("uid-%d", i)}}, "")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := rt.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{
					Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
					Image:    &runtimeapi.ImageSpec{Image: fmt.Sprintf("example.com/app%d:1", i%nImages)},
				}, nil); err != nil {
					b.Fatal(err)
				}
			}
			gc, err := imagegc.New(imagegc.Options{Runtime: rt})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := gc.DeleteUnusedImages(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
