package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeletkit/kubeletkit/examples/nodefarm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "scalenodes:", err)
		os.Exit(1)
	}
}

const usage = `usage: scalenodes nodes     --kubeconfig FILE [--nodes N] [--node-name-prefix P] ...
       scalenodes load      --kubeconfig FILE [--nodes N] [--node-name-prefix P] [--pods-per-node M] [--rate R] ...
       scalenodes heartbeat --kubeconfig FILE [--nodes N] [--node-name-prefix P] [--for D]
       scalenodes twin      --kubeconfig FILE --from NODE --to NODE [--namespace NS] [--pods N]
       scalenodes clean     --kubeconfig FILE [--node-name-prefix P]
run "scalenodes COMMAND -h" for the flags`

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return errors.New(usage)
	}
	switch args[0] {
	case "nodes":
		return runNodes(ctx, args[1:], stdout, stderr)
	case "load":
		return runLoad(ctx, args[1:], stdout, stderr)
	case "heartbeat":
		return runHeartbeat(ctx, args[1:], stdout, stderr)
	case "twin":
		return runTwin(ctx, args[1:], stdout, stderr)
	case "clean":
		return runClean(ctx, args[1:], stdout, stderr)
	default:
		return fmt.Errorf("unknown command %q\n%s", args[0], usage)
	}
}

// client returns a clientset of kubeconfig allowed qps and burst.
func client(kubeconfig string, qps float64, burst int) (kubernetes.Interface, error) {
	if kubeconfig == "" {
		return nil, errors.New("--kubeconfig is required")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	rc.QPS, rc.Burst = float32(qps), burst
	rc.UserAgent = "scalenodes"
	return kubernetes.NewForConfig(rc)
}

// runNodes runs a farm of nodes until ctx ends.
func runNodes(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("scalenodes nodes", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the API server the nodes join (its user must be allowed what a kubelet does for every node: an admin, or system:nodes with the Node authorizer off)")
	nodes := fs.Int("nodes", 10, "how many nodes to run")
	prefix := fs.String("node-name-prefix", nodefarm.DefaultNamePrefix, "prefix of the nodes' names, followed by the node's index (hollow-0000, ...)")
	rootDir := fs.String("root-dir", "", "directory of the nodes' directories (default: a new temporary directory, removed at the end)")
	crash := fs.Float64("crash-ratio", 0, "fraction of the containers every node starts that crash (exit 1) after --crash-after")
	crashAfter := fs.Duration("crash-after", nodefarm.DefaultCrashAfter, "how long a crashing container runs")
	pull := fs.Duration("pull-latency", 0, "how long every image pull takes")
	qps := fs.Float64("kube-api-qps", 50, "queries per second to the API server per node (upstream kubelet's default); the shared client gets this times --nodes")
	burst := fs.Int("kube-api-burst", 100, "burst of queries per node; the shared client gets this times --nodes")
	lease := fs.Int("node-lease-duration-seconds", 40, "duration of each node's Lease, renewed every quarter of it")
	pprofAddr := fs.String("pprof-address", "", "address of net/http/pprof (/debug/pprof/), e.g. 127.0.0.1:6060; empty: none")
	verbose := fs.Bool("v", false, "the nodes' warnings and errors on stderr (default: errors)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	if *nodes < 1 || *qps <= 0 || *burst <= 0 || *lease <= 0 {
		return fmt.Errorf("--nodes=%d, --kube-api-qps=%g, --kube-api-burst=%d, --node-lease-duration-seconds=%d: each must be positive", *nodes, *qps, *burst, *lease)
	}
	c, err := client(*kubeconfig, *qps*float64(*nodes), *burst**nodes)
	if err != nil {
		return err
	}
	if *rootDir == "" {
		dir, err := os.MkdirTemp("", "scalenodes")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		*rootDir = dir
	}
	level := slog.LevelError
	if *verbose {
		level = slog.LevelWarn
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	script := nodefarm.Script{CrashRatio: *crash, CrashAfter: *crashAfter, PullLatency: *pull}
	f, err := nodefarm.New(c, nodefarm.Options{Nodes: *nodes, NamePrefix: *prefix, RootDir: *rootDir, Logger: log,
		NodeLeaseDuration: time.Duration(*lease) * time.Second,
		Script:            func(int) nodefarm.Script { return script }})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pprofDone := make(chan error, 1)
	if *pprofAddr != "" {
		lis, err := net.Listen("tcp", *pprofAddr)
		if err != nil {
			return fmt.Errorf("--pprof-address: %w", err)
		}
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { pprofDone <- srv.Serve(lis) }()
		defer func() {
			_ = srv.Close()
			<-pprofDone
		}()
		fmt.Fprintf(stdout, "scalenodes: pprof on http://%s/debug/pprof/\n", lis.Addr())
	}
	fmt.Fprintf(stdout, "scalenodes: %d nodes %s0000..%s%04d, crash ratio %g, pull latency %s, root %s\n",
		*nodes, *prefix, *prefix, *nodes-1, *crash, *pull, *rootDir)
	return f.Run(ctx)
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }

// isTimeout reports whether the API server gave up on a request it may
// still be carrying out.
func isTimeout(err error) bool { return apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) }

// maxDeleteAttempts bounds clean's deletion of the load's pods, each
// attempt a request the API server may cut at its timeout (60s).
const maxDeleteAttempts = 10
