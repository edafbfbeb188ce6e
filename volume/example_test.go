package volume_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/volume"
	"github.com/kubeletkit/kubeletkit/volume/volumetest"
)

// A pod with a configMap and an emptyDir: WaitForMount sets them up, Mounts
// gives the container's CRI mounts, WaitForUnmount tears them down.
func Example() {
	root, _ := os.MkdirTemp("", "kubeletkit-volume-")
	defer os.RemoveAll(root)

	sources := &volume.StaticSources{}
	sources.SetConfigMap(&v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Data:       map[string]string{"index.html": "hello\n"},
	})
	m, err := volume.New(volume.Options{
		RootDir: root,
		Sources: volume.Sources{ConfigMaps: sources},
		Mounter: &volumetest.Mounter{}, // no tmpfs needed here
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "1234"},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{
				{Name: "html", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "web"}}}},
				{Name: "cache", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
			},
			Containers: []v1.Container{{Name: "nginx", VolumeMounts: []v1.VolumeMount{
				{Name: "html", MountPath: "/usr/share/nginx/html"},
				{Name: "cache", MountPath: "/var/cache/nginx"},
			}}},
		},
	}
	if err := m.WaitForMount(ctx, pod); err != nil {
		panic(err)
	}
	mounts, err := m.Mounts(pod, &pod.Spec.Containers[0])
	if err != nil {
		panic(err)
	}
	for _, mt := range mounts {
		rel, _ := filepath.Rel(root, mt.HostPath)
		fmt.Printf("%s <- %s (read-only %v)\n", mt.ContainerPath, rel, mt.Readonly)
	}
	b, _ := os.ReadFile(filepath.Join(mounts[0].HostPath, "index.html"))
	fmt.Printf("index.html: %s", b)

	if err := m.WaitForUnmount(ctx, pod); err != nil {
		panic(err)
	}
	_, err = os.Stat(mounts[1].HostPath)
	fmt.Println("emptyDir removed:", os.IsNotExist(err))
	// Output:
	// /usr/share/nginx/html <- pods/1234/volumes/kubernetes.io~configmap/html (read-only true)
	// /var/cache/nginx <- pods/1234/volumes/kubernetes.io~empty-dir/cache (read-only false)
	// index.html: hello
	// emptyDir removed: true
}
