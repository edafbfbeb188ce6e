package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

//go:embed default.yaml
var defaultConfig []byte

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "fakecri:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("fakecri", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "unix://"+filepath.Join(os.TempDir(), "kubeletkit", "fakecri.sock"), "CRI endpoint to serve (unix:///path or an absolute path)")
	configPath := fs.String("config", "", "script file (YAML or JSON); empty uses the embedded default.yaml")
	streamAddr := fs.String("streaming-listen", "127.0.0.1:0", "TCP address of the streaming server that Exec, Attach and PortForward return URLs on (port 0: any free port; empty: no streaming server, those calls fail as unimplemented)")
	quiet := fs.Bool("quiet", false, "log only warnings and errors, not every CRI call")
	if err := fs.Parse(args); err != nil {
		return err
	}
	level := slog.LevelDebug
	if *quiet {
		level = slog.LevelWarn
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	cfg, err := loadConfig(*configPath)
	if err != nil {
		return err
	}
	rt := fake.New(withLogger(cfg.options(), logger))
	defer rt.Close()
	cfg.apply(rt)

	srv, err := cri.NewServer(rt, rt, cri.ServerOptions{Logger: logger})
	if err != nil {
		return err
	}
	lis, err := cri.Listen(*listen)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	streamed := make(chan error, 1)
	if *streamAddr == "" {
		streamed <- nil
	} else {
		sl, err := net.Listen("tcp", *streamAddr)
		if err != nil {
			lis.Close()
			return fmt.Errorf("streaming server: %w", err)
		}
		ss, err := fake.NewStreamingServer(rt, fake.StreamingOptions{Listener: sl})
		if err != nil {
			sl.Close()
			lis.Close()
			return err
		}
		go func() { streamed <- ss.Run(ctx) }()
		logger.Info("serving exec, attach and port-forward sessions", "url", ss.URL())
	}
	logger.Info("serving the fake CRI runtime; stop with Ctrl-C", "endpoint", *listen,
		"try", "crictl --runtime-endpoint "+*listen+" version")
	err = srv.Serve(ctx, lis)
	stop()
	if serr := <-streamed; err == nil && serr != nil {
		err = fmt.Errorf("streaming server: %w", serr)
	}
	return err
}

func withLogger(opts fake.Options, logger *slog.Logger) fake.Options {
	opts.Logger = logger
	return opts
}
