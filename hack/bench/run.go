package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/kubeletkit/kubeletkit/cri"
	v1 "k8s.io/api/core/v1"
)

// Result is one kubelet's run. Times are in seconds from the start of the
// step they time, CPU in seconds used, memory in MiB.
type Result struct {
	Agent   string `json:"agent"`
	Runtime string `json:"runtime"`
	Pods    int    `json:"pods"`

	// FirstAnswer, FirstRunning and AllRunning count from the kubelet's
	// start: its /pods first answered, first listed a pod Running, listed
	// all of them Running.
	FirstAnswer  float64 `json:"firstAnswer"`
	FirstRunning float64 `json:"firstRunning"`
	AllRunning   float64 `json:"allRunning"`
	// StartupCPU is the CPU time used from the start until all pods ran,
	// StartupPeakRSS the peak resident memory by then (VmHWM).
	StartupCPU     float64 `json:"startupCPU"`
	StartupPeakRSS float64 `json:"startupPeakRSS"`

	// SteadySeconds is how long the kubelet was left alone once all pods
	// ran; SteadyCPU the CPU time it used in that window, SteadyRSS its
	// resident memory at the end and SteadyPeakRSS the highest of the
	// samples taken every second.
	SteadySeconds float64 `json:"steadySeconds"`
	SteadyCPU     float64 `json:"steadyCPU"`
	SteadyRSS     float64 `json:"steadyRSS"`
	SteadyPeakRSS float64 `json:"steadyPeakRSS"`

	// ExtraRunning and ExtraReady count from the extra manifest's arrival
	// in the directory until its pod was listed Running, and Ready.
	ExtraRunning float64 `json:"extraRunning"`
	ExtraReady   float64 `json:"extraReady"`

	// DeletePods and DeleteContainers count from the removal of every
	// manifest until /pods listed none of them, and until the runtime ran
	// none of their containers.
	DeletePods       float64 `json:"deletePods"`
	DeleteContainers float64 `json:"deleteContainers"`

	// LoadStart and LoadEnd are the machine's load average over a minute
	// when the kubelet started and when the run ended: other work on the
	// machine disturbs every figure.
	LoadStart float64 `json:"loadStart"`
	LoadEnd   float64 `json:"loadEnd"`

	// Gaps has, for each time above that a sample located (by its JSON
	// name), the gap between that sample and the one before it: how late
	// the time may be. Resolution is the widest.
	Gaps       map[string]float64 `json:"gaps"`
	Resolution float64            `json:"resolution"`
}

// bench is one run in progress.
type bench struct {
	pods      podsClient
	rt        *cri.Client
	pid       int
	exited    <-chan struct{}
	n         int
	manifests string
	extra     string
	steady    time.Duration
	timeout   time.Duration
	res       Result
}

func run(args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	var b bench
	fs.StringVar(&b.res.Agent, "agent", "", "the kubelet's name in the result (upstream, minikubelet); required")
	fs.StringVar(&b.res.Runtime, "runtime", "", "the runtime's name in the result (fakecri, containerd); required")
	fs.IntVar(&b.n, "n", 0, "how many pods the manifest directory holds; required")
	fs.StringVar(&b.pods.url, "url", "", "the kubelet's /pods; required")
	endpoint := fs.String("cri", "", "the runtime's CRI endpoint; required")
	fs.StringVar(&b.manifests, "manifests", "", "the kubelet's static pod directory, filled by bench manifests; required")
	fs.StringVar(&b.extra, "extra", "", "the extra pod's manifest, moved into --manifests after the steady state; required")
	fs.DurationVar(&b.steady, "steady", time.Minute, "how long to leave the kubelet alone once all pods run")
	fs.DurationVar(&b.timeout, "timeout", 10*time.Minute, "how long each step may take")
	pidfile := fs.String("pidfile", "", "where to write the kubelet's PID, for the caller to stop it if this program dies")
	logPath := fs.String("log", "", "the kubelet's output; required")
	out := fs.String("out", "", "the result (JSON); required")
	if err := fs.Parse(args); err != nil {
		return err
	}
	command := fs.Args()
	if b.res.Agent == "" || b.res.Runtime == "" || b.n <= 0 || b.pods.url == "" || *endpoint == "" ||
		b.manifests == "" || b.extra == "" || *logPath == "" || *out == "" || len(command) == 0 {
		return errors.New("run: --agent, --runtime, --n, --url, --cri, --manifests, --extra, --log, --out and a command are required")
	}
	b.res.Pods = b.n
	b.pods.client = &http.Client{Timeout: 30 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rt, err := cri.Dial(ctx, *endpoint, cri.DialOptions{})
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer rt.Close()
	b.rt = rt
	logFile, err := os.Create(*logPath)
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	defer logFile.Close()

	cmd := exec.Command(command[0], command[1:]...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Its own session: a Ctrl-C of the harness reaches this program,
	// which stops the kubelet, rather than both at once.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if b.res.LoadStart, err = loadAverage(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	b.pid = cmd.Process.Pid
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	b.exited = exited
	defer stopKubelet(cmd, exited)
	if *pidfile != "" {
		if err := os.WriteFile(*pidfile, []byte(strconv.Itoa(b.pid)+"\n"), 0o644); err != nil {
			return fmt.Errorf("run: %w", err)
		}
	}

	if err := b.measure(ctx, t0); err != nil {
		return fmt.Errorf("run %s on %s, %d pods: %w (the kubelet's output: %s)", b.res.Agent, b.res.Runtime, b.n, err, *logPath)
	}
	if b.res.LoadEnd, err = loadAverage(); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	data, err := json.MarshalIndent(b.res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(*out, append(data, '\n'), 0o644)
}

// stopKubelet sends SIGTERM, and SIGKILL 20s later.
func stopKubelet(cmd *exec.Cmd, exited <-chan struct{}) {
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		return
	case <-time.After(20 * time.Second):
	}
	_ = cmd.Process.Kill()
	<-exited
}

// measure runs the steps in order.
func (b *bench) measure(ctx context.Context, t0 time.Time) error {
	for _, step := range []func(context.Context, time.Time) error{b.startup, b.steadyState, b.addOne, b.deleteAll} {
		ctx, cancel := context.WithTimeout(ctx, b.timeout)
		err := step(ctx, t0)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// alive fails once the kubelet has exited or ctx has ended.
func (b *bench) alive(ctx context.Context) error {
	select {
	case <-b.exited:
		return errors.New("the kubelet exited")
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return nil
}

func seconds(d time.Duration) float64 { return d.Seconds() }

func mib(bytes int64) float64 { return float64(bytes) / (1 << 20) }

// located records that the last sample of p saw the event named name:
// how late its time may be.
func (b *bench) located(name string, p *poller) {
	if b.res.Gaps == nil {
		b.res.Gaps = map[string]float64{}
	}
	b.res.Gaps[name] = seconds(p.gap)
	b.res.Resolution = max(b.res.Resolution, seconds(p.gap))
}

// samplePods reads /pods once, when p allows.
func (b *bench) samplePods(ctx context.Context, p *poller) (podCounts, time.Time, error) {
	var c podCounts
	at, err := p.sample(func() (time.Time, error) {
		var at time.Time
		var err error
		c, at, err = b.pods.get(ctx)
		return at, err
	})
	return c, at, err
}

// startup polls /pods from the start until every pod is Running.
func (b *bench) startup(ctx context.Context, t0 time.Time) error {
	p := poller{min: 10 * time.Millisecond}
	var lastErr error
	var c podCounts
	for {
		if err := b.alive(ctx); err != nil {
			return fmt.Errorf("waiting for %d pods Running (%d so far; last error: %v): %w", b.n, c.Running, lastErr, err)
		}
		got, at, err := b.samplePods(ctx, &p)
		if err != nil {
			lastErr = err
			continue
		}
		c = got
		if b.res.FirstAnswer == 0 {
			b.res.FirstAnswer = seconds(at.Sub(t0))
		}
		if c.Failed > 0 {
			return fmt.Errorf("%d pods Failed, among them %s", c.Failed, c.Failure)
		}
		if b.res.FirstRunning == 0 && c.Running > 0 {
			b.res.FirstRunning = seconds(at.Sub(t0))
			b.located("firstRunning", &p)
			p.min = 50 * time.Millisecond
		}
		if c.Running >= b.n {
			b.res.AllRunning = seconds(at.Sub(t0))
			b.located("allRunning", &p)
			s, err := readProc(b.pid)
			if err != nil {
				return err
			}
			b.res.StartupCPU, b.res.StartupPeakRSS = seconds(s.CPU), mib(s.HWM)
			return nil
		}
	}
}

// steadyState leaves the kubelet alone for b.steady, reading its memory
// every second, then checks that every pod still runs.
func (b *bench) steadyState(ctx context.Context, _ time.Time) error {
	start := time.Now()
	first, err := readProc(b.pid)
	if err != nil {
		return err
	}
	last := first
	peak := first.RSS
	for next := start.Add(time.Second); ; next = next.Add(time.Second) {
		if err := b.alive(ctx); err != nil {
			return fmt.Errorf("steady state: %w", err)
		}
		if next.After(start.Add(b.steady)) {
			next = start.Add(b.steady)
		}
		time.Sleep(time.Until(next))
		if last, err = readProc(b.pid); err != nil {
			return err
		}
		peak = max(peak, last.RSS)
		if !next.Before(start.Add(b.steady)) {
			break
		}
	}
	b.res.SteadySeconds = seconds(time.Since(start))
	b.res.SteadyCPU = seconds(last.CPU - first.CPU)
	b.res.SteadyRSS, b.res.SteadyPeakRSS = mib(last.RSS), mib(peak)
	c, _, err := b.pods.get(ctx)
	if err != nil {
		return fmt.Errorf("after the steady state: %w", err)
	}
	if c.Running != b.n || c.Listed != b.n {
		return fmt.Errorf("after the steady state, %d pods listed and %d Running, want %d", c.Listed, c.Running, b.n)
	}
	return nil
}

// addOne moves the extra manifest into the directory and polls /pods until
// its pod is Ready.
func (b *bench) addOne(ctx context.Context, _ time.Time) error {
	dst := filepath.Join(b.manifests, filepath.Base(b.extra))
	t := time.Now()
	if err := os.Rename(b.extra, dst); err != nil {
		return err
	}
	p := poller{min: 2 * time.Millisecond, eager: true}
	var c podCounts
	for {
		if err := b.alive(ctx); err != nil {
			return fmt.Errorf("waiting for %s Ready (phase %q): %w", extraName, c.Extra, err)
		}
		got, at, err := b.samplePods(ctx, &p)
		if err != nil {
			continue
		}
		c = got
		if b.res.ExtraRunning == 0 && c.Extra == v1.PodRunning {
			b.res.ExtraRunning = seconds(at.Sub(t))
			b.located("extraRunning", &p)
		}
		if c.ExtraReady {
			b.res.ExtraReady = seconds(at.Sub(t))
			b.located("extraReady", &p)
			return nil
		}
	}
}

// deleteAll removes every manifest and polls /pods and the runtime until
// neither lists any of the pods running.
func (b *bench) deleteAll(ctx context.Context, _ time.Time) error {
	running, _, err := runningContainers(ctx, b.rt)
	if err != nil {
		return err
	}
	if running != b.n+1 {
		return fmt.Errorf("before the deletion the runtime runs %d containers of the pods, want %d", running, b.n+1)
	}
	entries, err := os.ReadDir(b.manifests)
	if err != nil {
		return err
	}
	t := time.Now()
	for _, e := range entries {
		if err := os.Remove(filepath.Join(b.manifests, e.Name())); err != nil {
			return err
		}
	}
	// Back to back, as in addOne: the first figure is milliseconds.
	p := poller{min: 2 * time.Millisecond, eager: true}
	var listed int
	var lastErr error
	for b.res.DeletePods == 0 || b.res.DeleteContainers == 0 {
		if err := b.alive(ctx); err != nil {
			return fmt.Errorf("after the deletion, %d pods listed, %d containers running (last error: %v): %w", listed, running, lastErr, err)
		}
		var found []string
		_, err := p.sample(func() (time.Time, error) {
			var last time.Time
			if b.res.DeletePods == 0 {
				c, at, err := b.pods.get(ctx)
				if err != nil {
					return at, err
				}
				if listed = c.Listed; listed == 0 {
					b.res.DeletePods, found = seconds(at.Sub(t)), append(found, "deletePods")
				}
				last = at
			}
			if b.res.DeleteContainers == 0 {
				n, at, err := runningContainers(ctx, b.rt)
				if err != nil {
					return at, err
				}
				if running = n; running == 0 {
					b.res.DeleteContainers, found = seconds(at.Sub(t)), append(found, "deleteContainers")
				}
				last = at
			}
			return last, nil
		})
		if err != nil {
			lastErr = err
		}
		for _, name := range found {
			b.located(name, &p)
		}
	}
	return nil
}
