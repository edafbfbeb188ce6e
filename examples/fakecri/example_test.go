package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// Serve the runtime that the embedded default script describes, as run does,
// on a socket in a temporary directory; connect to it, ask it its version and
// for an image the script preloads, and stop it.
func Example() {
	dir, err := os.MkdirTemp("", "fakecri")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	endpoint := "unix://" + filepath.Join(dir, "cri.sock")

	cfg, err := loadConfig("") // the embedded default.yaml
	if err != nil {
		panic(err)
	}
	logger := slog.New(slog.DiscardHandler)
	rt := fake.New(withLogger(cfg.options(), logger))
	defer rt.Close()
	cfg.apply(rt)
	srv, err := cri.NewServer(rt, rt, cri.ServerOptions{Logger: logger})
	if err != nil {
		panic(err)
	}
	lis, err := cri.Listen(endpoint) // the socket exists once Listen returns
	if err != nil {
		panic(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, lis) }()

	client, err := cri.Dial(context.Background(), endpoint, cri.DialOptions{})
	if err != nil {
		panic(err)
	}
	v := client.RuntimeVersion() // what Dial's Version call returned
	fmt.Println(v.RuntimeName, v.RuntimeVersion, v.RuntimeApiVersion)
	img, err := client.ImageStatus(context.Background(), &runtimeapi.ImageSpec{Image: "docker.io/local/busybox:1"}, false)
	if err != nil {
		panic(err)
	}
	fmt.Println("docker.io/local/busybox:1 present:", img.Image != nil)

	if err := client.Close(); err != nil {
		panic(err)
	}
	stop()
	fmt.Println("served:", <-served)
	_, err = os.Stat(filepath.Join(dir, "cri.sock"))
	fmt.Println("socket removed:", os.IsNotExist(err))
	// Output:
	// kubeletkit-fake 0.1.0 v1
	// docker.io/local/busybox:1 present: true
	// served: <nil>
	// socket removed: true
}
