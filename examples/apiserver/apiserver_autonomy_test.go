//go:build apiserver && containerd

package apiserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/internal/ctrdtest"
)

// cutProxy forwards TCP connections to an address until Cut, which closes
// its listener and every connection; Restore listens again on the same
// port. It is how the test cuts one node off a control plane that other
// clients (the test's own) still reach.
type cutProxy struct {
	t      *testing.T
	target string
	addr   string

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
	wg    sync.WaitGroup
}

func newCutProxy(t *testing.T, target string) *cutProxy {
	p := &cutProxy{t: t, target: target, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(func() { p.Cut(); p.wg.Wait() })
	return p
}

func (p *cutProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[up] = true, true
			p.mu.Unlock()
			for _, pair := range [][2]net.Conn{{c, up}, {up, c}} {
				p.wg.Go(func() {
					_, _ = io.Copy(pair[0], pair[1])
					_ = pair[0].Close()
					_ = pair[1].Close()
				})
			}
		}
	})
}

// Cut closes the listener and every connection.
func (p *cutProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Restore listens again on the proxy's port.
func (p *cutProxy) Restore() {
	ln, err := net.Listen("tcp", p.addr)
	require.NoError(p.t, err)
	p.serve(ln)
}

// controlPlane runs hack/controlplane-start.sh with arg.
func controlPlane(t *testing.T, arg string) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", "hack", "controlplane-start.sh"))
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, "bash", script, arg).CombinedOutput()
	require.NoError(t, err, "controlplane-start.sh %s:\n%s", arg, out)
	t.Logf("controlplane-start.sh %s: %s", arg, strings.TrimSpace(string(out)))
}

// goBuild builds pkg (a path of the workspace) into dir and returns the
// binary.
func goBuild(t *testing.T, dir, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, filepath.Base(pkg))
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	require.NoError(t, err, "go build %s:\n%s", pkg, out)
	return bin
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// minikubelet is one run of the minikubelet binary.
type minikubelet struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startMinikubelet(t *testing.T, bin string, args []string, log string) *minikubelet {
	t.Helper()
	f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	require.NoError(t, err)
	fmt.Fprintf(f, "\n==== %s minikubelet %s\n", time.Now().Format(time.RFC3339), strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	require.NoError(t, cmd.Start())
	m := &minikubelet{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = f.Close(); close(m.done) }()
	t.Cleanup(func() { m.kill(t) })
	return m
}

// kill SIGKILLs the process (ours, by its PID) and waits for it.
func (m *minikubelet) kill(t *testing.T) {
	select {
	case <-m.done:
		return
	default:
	}
	require.NoError(t, m.cmd.Process.Signal(syscall.SIGKILL))
	<-m.done
}

func httpGet(url string) (string, error) {
	c := &http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// runningOf returns the running containers of the pod podName by container
// name, and how many ready sandboxes the pod has.
func runningOf(t *testing.T, rt interface {
	ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error)
}, ns, podName string) (map[string][]*runtimeapi.Container, int) {
	t.Helper()
	labels := map[string]string{"io.kubernetes.pod.namespace": ns, "io.kubernetes.pod.name": podName}
	cs, err := rt.ListContainers(context.Background(), &runtimeapi.ContainerFilter{LabelSelector: labels,
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	require.NoError(t, err)
	out := map[string][]*runtimeapi.Container{}
	for _, c := range cs {
		out[c.Metadata.Name] = append(out[c.Metadata.Name], c)
	}
	sbs, err := rt.ListPodSandbox(context.Background(), &runtimeapi.PodSandboxFilter{LabelSelector: labels,
		State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}})
	require.NoError(t, err)
	return out, len(sbs)
}

// The fault test of edge autonomy (issue 25), on containerd and the real
// kube-apiserver: pods run through the API server (one crash-looping, one
// with a configMap volume, one with a liveness probe); the node is cut off
// and the kube-apiserver stopped (hack/controlplane-start.sh
// --stop-apiserver); minikubelet is SIGKILLed and restarted twice and
// comes back from its local state; a container is killed by hand and must
// be restarted while the server is down; after 60s the server comes back,
// a pod deleted through it meanwhile must be terminated, one created
// meanwhile started, and the statuses through the API server must equal
// the node's own (/pods), compared by hack/fidelity.
func TestAPIServerAutonomyOnContainerd(t *testing.T) {
	admin, _, nodeName := apiEnv(t)
	rt, image := ctrdtest.Client(t)
	ctx := context.Background()
	dir := t.TempDir()
	work := os.Getenv("KK_WORK")
	if work == "" {
		work = dir
	}
	logFile := filepath.Join(work, "autonomy-minikubelet.log")
	t.Logf("minikubelet's log: %s", logFile)

	bin := goBuild(t, dir, "github.com/kubeletkit/kubeletkit/examples/minikubelet")
	fidelity := goBuild(t, dir, "github.com/kubeletkit/kubeletkit/hack/fidelity")

	// The node reaches the API server through a proxy the test can cut.
	apiURL := os.Getenv("KK_APISERVER_URL")
	require.NotEmpty(t, apiURL)
	proxy := newCutProxy(t, strings.TrimPrefix(apiURL, "https://"))
	kc, err := clientcmd.LoadFromFile(os.Getenv("KK_NODE_KUBECONFIG"))
	require.NoError(t, err)
	for _, c := range kc.Clusters {
		c.Server = "https://" + proxy.addr
	}
	nodeKubeconfig := filepath.Join(dir, "kubeconfig-node")
	require.NoError(t, clientcmd.WriteToFile(*kc, nodeKubeconfig))

	roPort := freePort(t)
	pods := fmt.Sprintf("http://127.0.0.1:%d", roPort)
	args := []string{"--kubeconfig", nodeKubeconfig, "--node-name", nodeName, "--container-runtime-endpoint", os.Getenv("KK_CRI_ENDPOINT"),
		"--root-dir", filepath.Join(dir, "root"), "--read-only-port", strconv.Itoa(roPort), "--port", strconv.Itoa(freePort(t)),
		"--cgroups-per-qos=false", "--node-ip", "127.0.0.1",
		// The test machine's own disk must not evict or refuse the pods.
		"--eviction-hard="}

	suffix := rand.String(5)
	ns := "default"
	cfgName := "autonomy-cfg-" + suffix
	_, err = admin.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: cfgName}, Data: map[string]string{"mode": "edge"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = admin.CoreV1().ConfigMaps(ns).Delete(context.Background(), cfgName, metav1.DeleteOptions{})
	})
	grace := int64(5)
	pod := func(name string, c v1.Container) *v1.Pod {
		c.Image, c.ImagePullPolicy = image, v1.PullIfNotPresent
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-" + suffix, Namespace: ns},
			Spec: v1.PodSpec{NodeName: nodeName, TerminationGracePeriodSeconds: &grace, Containers: []v1.Container{c}}}
	}
	crash := pod("crash", v1.Container{Name: "app", Command: []string{"sh", "-c", "sleep 2; exit 1"}})
	withCfg := pod("cfg", v1.Container{Name: "app", Command: []string{"sleep", "3600"}, VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}}})
	withCfg.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cfgName}}}}}
	live := pod("live", v1.Container{Name: "app", Command: []string{"sleep", "3600"},
		LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}, PeriodSeconds: 5}})
	doomed := pod("doomed", v1.Container{Name: "app", Command: []string{"sleep", "3600"}})
	fresh := pod("fresh", v1.Container{Name: "app", Command: []string{"sleep", "3600"}})
	for _, p := range []*v1.Pod{crash, withCfg, live, doomed} {
		_, err := admin.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		for _, p := range []*v1.Pod{crash, withCfg, live, doomed, fresh} {
			_ = admin.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		}
	})

	// Runs after the last minikubelet is killed (cleanups run last
	// registered first): its pods' sandboxes and mounts go, so that the
	// tests after this one find containerd and the disk as they were.
	t.Cleanup(func() {
		for _, p := range []*v1.Pod{crash, withCfg, live, doomed, fresh} {
			sbs, err := rt.ListPodSandbox(context.Background(), &runtimeapi.PodSandboxFilter{
				LabelSelector: map[string]string{"io.kubernetes.pod.namespace": ns, "io.kubernetes.pod.name": p.Name}})
			if err != nil {
				t.Errorf("list the sandboxes of %s: %v", p.Name, err)
				continue
			}
			for _, sb := range sbs {
				_ = rt.StopPodSandbox(context.Background(), sb.Id)
				if err := rt.RemovePodSandbox(context.Background(), sb.Id); err != nil {
					t.Errorf("remove the sandbox of %s: %v", p.Name, err)
				}
			}
		}
		unmountUnder(t, filepath.Join(dir, "root"))
	})

	// Online: every pod runs, the crash loop has restarted once.
	mk := startMinikubelet(t, bin, args, logFile)
	eventuallyWithin(t, 2*time.Minute, "the pods running through the API server", func() bool {
		for _, p := range []*v1.Pod{crash, withCfg, live, doomed} {
			got, err := admin.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || got.Status.Phase != v1.PodRunning {
				return false
			}
		}
		got, err := admin.CoreV1().Pods(ns).Get(ctx, crash.Name, metav1.GetOptions{})
		return err == nil && len(got.Status.ContainerStatuses) == 1 && got.Status.ContainerStatuses[0].RestartCount >= 1
	})

	got, err := admin.CoreV1().Pods(ns).Get(ctx, crash.Name, metav1.GetOptions{})
	require.NoError(t, err)
	crashRestarts := got.Status.ContainerStatuses[0].RestartCount

	// Cut off: the kube-apiserver stops and the node's way to it is cut.
	proxy.Cut()
	controlPlane(t, "--stop-apiserver")
	down := time.Now()
	apiserverStopped := true
	t.Cleanup(func() {
		if apiserverStopped { // leave the control plane as the CI's later stages need it
			controlPlane(t, "--start-apiserver")
		}
	})

	// minikubelet is killed and restarted twice; each comes back from its
	// local state and says so.
	for range 2 {
		mk.kill(t)
		mk = startMinikubelet(t, bin, args, logFile)
		eventuallyWithin(t, time.Minute, "minikubelet serving its local state", func() bool {
			body, err := httpGet(pods + "/healthz?verbose")
			return err == nil && strings.Contains(body, "[+]apisource ok: serving 4 pods from the local state")
		})
	}

	// A container killed by hand is restarted while the server is down.
	cs, _ := runningOf(t, rt, ns, live.Name)
	require.Len(t, cs["app"], 1, "live's container runs")
	killed := cs["app"][0]
	require.NoError(t, rt.StopContainer(ctx, killed.Id, 0))
	eventuallyWithin(t, time.Minute, "the killed container restarted while the API server is down", func() bool {
		cs, _ := runningOf(t, rt, ns, live.Name)
		return len(cs["app"]) == 1 && cs["app"][0].Id != killed.Id && cs["app"][0].Metadata.Attempt > killed.Metadata.Attempt
	})
	eventuallyWithin(t, time.Minute, "the crash loop going on while the API server is down", func() bool {
		body, err := httpGet(pods + "/pods")
		if err != nil {
			return false
		}
		var list v1.PodList
		if json.Unmarshal([]byte(body), &list) != nil {
			return false
		}
		for _, p := range list.Items {
			if p.Name == crash.Name && len(p.Status.ContainerStatuses) == 1 {
				return p.Status.ContainerStatuses[0].RestartCount > crashRestarts
			}
		}
		return false
	})
	_, err = admin.CoreV1().Pods(ns).Get(ctx, live.Name, metav1.GetOptions{})
	require.Error(t, err, "the API server is still down")

	// After 60s the server comes back; the node is still cut off while a
	// pod is deleted and another created through it.
	if wait := time.Until(down.Add(60 * time.Second)); wait > 0 {
		time.Sleep(wait) // the outage the issue asks for
	}
	controlPlane(t, "--start-apiserver")
	apiserverStopped = false
	require.NoError(t, admin.CoreV1().Pods(ns).Delete(ctx, doomed.Name, metav1.DeleteOptions{}))
	_, err = admin.CoreV1().Pods(ns).Create(ctx, fresh, metav1.CreateOptions{})
	require.NoError(t, err)
	body, err := httpGet(pods + "/healthz?verbose")
	require.NoError(t, err)
	require.Contains(t, body, "serving 4 pods from the local state", "still cut off")
	reconnect := time.Now()
	proxy.Restore()

	// Converged: the deleted pod terminated (and removed, after its
	// grace period), the new one running, the node Ready with a renewed
	// lease, no pod with two containers or sandboxes.
	eventuallyWithin(t, 3*time.Minute, "the pod deleted while the node was cut off terminated and gone", func() bool {
		_, err := admin.CoreV1().Pods(ns).Get(ctx, doomed.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	cs, _ = runningOf(t, rt, ns, doomed.Name)
	assert.Empty(t, cs, "doomed's containers are stopped")
	eventuallyWithin(t, 2*time.Minute, "the pod created while the node was cut off running", func() bool {
		got, err := admin.CoreV1().Pods(ns).Get(ctx, fresh.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == v1.PodRunning
	})
	eventuallyWithin(t, time.Minute, "the lease renewed after the reconnection", func() bool {
		l, err := admin.CoordinationV1().Leases("kube-node-lease").Get(ctx, nodeName, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(reconnect)
	})
	waitAPINodeReady(t, admin, nodeName)
	body, err = httpGet(pods + "/healthz?verbose")
	require.NoError(t, err)
	assert.NotContains(t, body, "local state")
	for _, p := range []*v1.Pod{crash, withCfg, live, fresh} {
		cs, sandboxes := runningOf(t, rt, ns, p.Name)
		assert.LessOrEqual(t, sandboxes, 1, "%s: one sandbox", p.Name)
		for name, c := range cs {
			assert.Len(t, c, 1, "%s/%s: one running container", p.Name, name)
		}
	}
	cs, _ = runningOf(t, rt, ns, live.Name)
	assert.Equal(t, killed.Metadata.Attempt+1, cs["app"][0].Metadata.Attempt, "live's container restarted once, not again on reconnect")

	// No status lost: what the API server holds equals what the node
	// reports, field by field (hack/fidelity compare, which tolerates
	// only crash-loop timing). Recorded at the same moment, twice 5s.
	time.Sleep(10 * time.Second) // let the status manager send what the reconnection changed
	nodeRec, apiRec := filepath.Join(dir, "node.json"), filepath.Join(dir, "api.json")
	var wg sync.WaitGroup
	var recErr [2]error
	var recOut [2][]byte
	wg.Go(func() {
		recOut[0], recErr[0] = exec.Command(fidelity, "record", "--url", pods+"/pods", "--duration", "5s", "--out", nodeRec).CombinedOutput()
	})
	wg.Go(func() {
		recOut[1], recErr[1] = exec.Command(fidelity, "record", "--server", apiURL, "--token", os.Getenv("KK_APISERVER_TOKEN"),
			"--ca", os.Getenv("KK_APISERVER_CA"), "--node", nodeName, "--duration", "5s", "--out", apiRec).CombinedOutput()
	})
	wg.Wait()
	require.NoError(t, errors.Join(recErr[:]...), "fidelity record:\n%s\n%s", recOut[0], recOut[1])
	out, err := exec.Command(fidelity, "compare", apiRec, nodeRec).CombinedOutput()
	t.Logf("fidelity compare (API server vs the node's /pods):\n%s", out)
	require.NoError(t, err, "the statuses through the API server differ from the node's own")
}

// eventuallyWithin is eventually with another bound.
func eventuallyWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen within %s", what, d)
		}
		time.Sleep(200 * time.Millisecond) // polling a real API server, runtime and process
	}
}
