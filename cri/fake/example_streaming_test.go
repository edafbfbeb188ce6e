package fake_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// A streaming server on a loopback port: Exec returns a URL on it, and a
// client runs the session there (here a bare SPDY client; kubectl and
// crictl use client-go's tools/remotecommand). Once Run returns, the
// runtime has no streaming server again.
func ExampleStreamingServer() {
	ctx := context.Background()
	rt := fake.New(fake.Options{Images: []string{"busybox"}})
	defer rt.Close()
	podConfig := &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Namespace: "default", Uid: "uid-1"}}
	sandboxID, err := rt.RunPodSandbox(ctx, podConfig, "")
	if err != nil {
		panic(err)
	}
	id, err := rt.CreateContainer(ctx, sandboxID, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		Command:  []string{"sleep", "3600"},
	}, podConfig)
	if err != nil {
		panic(err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		panic(err)
	}

	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	srv, err := fake.NewStreamingServer(rt, fake.StreamingOptions{Listener: lis})
	if err != nil {
		panic(err)
	}
	serving, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- srv.Run(serving) }()

	resp, err := rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh", "-c", "echo hello; exit 3"}, Stdout: true})
	if err != nil {
		panic(err)
	}
	stdout, status := execSession(resp.Url)
	fmt.Printf("stdout %q\nstatus %s\n", stdout, status)

	stop()
	fmt.Println("run:", <-done)
	_, err = rt.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"true"}, Stdout: true})
	fmt.Println("then:", errors.Is(err, cri.ErrUnimplemented))
	// Output:
	// stdout "hello\n"
	// status {"status":"Failure","message":"command terminated with non-zero exit code: error executing command [sh -c echo hello; exit 3], exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}
	// run: <nil>
	// then: true
}

// execSession runs an exec session that asked for stdout only, with the
// v4 protocol: an error stream, which ends with the command's status, and
// the stdout stream.
func execSession(url string) (stdout, status string) {
	rt, err := spdy.NewRoundTripper(nil)
	if err != nil {
		panic(err)
	}
	req, err := http.NewRequest(http.MethodPost, url, nil)
	if err != nil {
		panic(err)
	}
	req.Header.Set(httpstream.HeaderProtocolVersion, remotecommand.StreamProtocolV4Name)
	resp, err := rt.RoundTrip(req)
	if err != nil {
		panic(err)
	}
	conn, err := rt.NewConnection(resp)
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	stream := func(kind string) httpstream.Stream {
		s, err := conn.CreateStream(http.Header{remotecommand.StreamType: []string{kind}})
		if err != nil {
			panic(err)
		}
		return s
	}
	errs, out := stream(remotecommand.StreamTypeError), stream(remotecommand.StreamTypeStdout)
	data, _ := io.ReadAll(out)
	st, _ := io.ReadAll(errs)
	return string(data), string(st)
}
