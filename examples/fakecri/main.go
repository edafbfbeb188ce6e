package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"log/slog"
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
	logger.Info("serving the fake CRI runtime; stop with Ctrl-C", "endpoint", *listen,
		"try", "crictl --runtime-endpoint "+*listen+" version")
	return srv.Serve(ctx, lis)
}

func withLogger(opts fake.Options, logger *slog.Logger) fake.Options {
	opts.Logger = logger
	return opts
}
