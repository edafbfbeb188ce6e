package cri_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// Serve the in-memory fake runtime on a unix socket, connect to it as to any
// CRI runtime, and stop both.
func Example() {
	// A fresh directory under os.TempDir keeps the socket path short enough
	// for the 108-byte limit of unix socket names.
	dir, err := os.MkdirTemp("", "kkcri")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	endpoint := "unix://" + filepath.Join(dir, "cri.sock")

	rt := fake.New(fake.Options{})
	defer rt.Close()
	srv, err := cri.NewServer(rt, rt, cri.ServerOptions{})
	if err != nil {
		panic(err)
	}
	// Listening before serving means the socket exists once Listen returns,
	// so Dial needs no retry.
	lis, err := cri.Listen(endpoint)
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
	v, err := client.Version(context.Background(), cri.APIVersion)
	if err != nil {
		panic(err)
	}
	fmt.Println(v.RuntimeName, v.RuntimeApiVersion)

	if err := client.Close(); err != nil {
		panic(err)
	}
	stop()                           // Serve stops gracefully once its ctx ends
	fmt.Println("served:", <-served) // and returns nil after every goroutine it started has ended
	// Output:
	// kubeletkit-fake v1
	// served: <nil>
}
