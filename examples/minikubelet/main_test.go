package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
)

// spdystream's connection shutdown goroutine ends within a second of both
// ends closing an exec's connection.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/moby/spdystream.(*Connection).shutdown"))
}

func TestFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--eviction-hard", "memory.available>1Gi"}, "memory.available>1Gi"},
		{[]string{"--eviction-soft", "memory.available<1Gi"}, "grace period must be specified"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"--cluster-dns", "10.96.0.10,kube-dns"}, `invalid value "10.96.0.10,kube-dns" for flag -cluster-dns: "kube-dns" is not an IP address`},
		{[]string{"--cluster-domain", "cluster local"}, "Node.ClusterDomain"},
		{[]string{"--max-parallel-image-pulls", "4"}, "invalid configuration: maxParallelImagePulls cannot be larger than 1 unless SerializeImagePulls (--serialize-image-pulls) is set to false"},
		{[]string{"--cluster-dns", "10.96.0.10,kube-dns"}, `invalid value "10.96.0.10,kube-dns" for flag -cluster-dns: "kube-dns" is not an IP address`},
		{[]string{"--cluster-domain", "cluster local"}, "Node.ClusterDomain"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--node-labels", "a=b"}, "--node-labels needs --kubeconfig"},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig"}, "kubeconfig /nonexistent/kubeconfig"},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig", "--node-labels", "novalue"}, `"novalue" is not key=value`},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig", "--node-labels", "bad key=x"}, `key "bad key"`},
		{[]string{"--register-node=false"}, "--register-node needs --kubeconfig"},
		{[]string{"--kube-api-qps", "10"}, "--kube-api-qps needs --kubeconfig"},
		{[]string{"--local-state", "/var/lib/minikubelet/localstate.db"}, "--local-state needs --kubeconfig"},
		{[]string{"--local-state-key-file", "/etc/minikubelet/localstate.key"}, "--local-state-key-file needs --kubeconfig"},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig", "--kube-api-burst", "-1"}, "invalid configuration: kubeAPIBurst (--kube-api-burst) -1 must not be a negative number"},
		{[]string{"--image-gc-high-threshold", "70"}, "invalid configuration: imageGCLowThresholdPercent (--image-gc-low-threshold) 80 must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 70"},
		{[]string{"--minimum-image-ttl-duration", "-1s"}, "invalid configuration: imageMinimumGCAge -1s must not be negative"},
		{[]string{"--node-lease-duration-seconds", "10"}, "--node-lease-duration-seconds needs --kubeconfig"},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig", "--node-lease-duration-seconds", "0"}, "invalid configuration: nodeLeaseDurationSeconds must be greater than 0"},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig", "--register-node=false", "--node-labels", "a=b"}, "--register-node=false skips"},
		{[]string{"--authorization-mode", "Webhook"}, `authorization.mode "Webhook": not supported by this node (needs an API server)`},
		{[]string{"--authorization-mode", "RBAC"}, `authorization.mode "RBAC": must be AlwaysAllow or Webhook`},
		{[]string{"--authentication-token-webhook"}, "authentication.webhook.enabled true: not supported by this node (needs an API server)"},
		{[]string{"--tls-cert-file", "/etc/kubelet.crt"}, `tlsCertFile "/etc/kubelet.crt" and tlsPrivateKeyFile "": both or neither`},
		{[]string{"--container-log-max-size", "ten"}, `containerLogMaxSize "ten"`},
		{[]string{"--container-log-max-files", "1"}, "invalid configuration: containerLogMaxFiles must be greater than 1"},
		{[]string{"--shutdown-signal", "SIGTERM"}, "--shutdown-signal=SIGTERM needs --shutdown-grace-period"},
		{[]string{"--shutdown-grace-period", "10s", "--shutdown-signal", "SIGKILL"}, "--shutdown-signal=SIGKILL: must be one of"},
		{[]string{"--shutdown-grace-period", "10s", "--shutdown-grace-period-critical-pods", "20s"},
			"invalid configuration: shutdownGracePeriodCriticalPods {20s} must be <= shutdownGracePeriod {10s}"},
		{[]string{"--container-runtime-endpoint", "unix:///x.sock", "--cgroups-per-qos=false", "--enforce-node-allocatable", "pods"},
			`invalid configuration: cgroupsPerQOS (--cgroups-per-qos) must be set to true when "pods" contained in enforceNodeAllocatable (--enforce-node-allocatable)`},
		{[]string{"--shutdown-grace-period", "500ms"}, "invalid configuration: shutdownGracePeriod {500ms} must be either zero or otherwise >= 1 sec"},
		{[]string{"--image-credential-provider-config", "/etc/kubernetes/credential-providers.yaml"}, `plugin binary directory "" did not exist`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			err := run(context.Background(), append(tt.args, "--root-dir", t.TempDir()), io.Discard, io.Discard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// webManifests writes a manifest directory under dir with one pod, web,
// whose container sleeps, and returns its path.
func webManifests(t *testing.T, dir string) string {
	t.Helper()
	manifests := filepath.Join(dir, "manifests")
	require.NoError(t, os.Mkdir(manifests, 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(manifests, "web.yaml"), []byte(`
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: web, image: busybox:1.36, command: [sleep, "3600"]}
`), 0o600))
	return manifests
}

// --runonce on the embedded fake runtime starts the pods, waits until they
// run and prints them.
func TestRunOnce(t *testing.T) {
	dir := t.TempDir()
	manifests := webManifests(t, dir)
	var out bytes.Buffer
	err := run(context.Background(), []string{"--runonce", "--node-name", "edge1", "--root-dir", filepath.Join(dir, "root"),
		"--pod-manifest-path", manifests, "--eviction-hard", ""}, &out, io.Discard)
	require.NoError(t, err)
	var list v1.PodList
	require.NoError(t, json.Unmarshal(out.Bytes(), &list), out.String())
	require.Len(t, list.Items, 1)
	p := list.Items[0]
	assert.Equal(t, "web-edge1", p.Name)
	assert.Equal(t, v1.PodRunning, p.Status.Phase)
	require.Len(t, p.Status.ContainerStatuses, 1)
	assert.NotNil(t, p.Status.ContainerStatuses[0].State.Running)
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// freePort returns a port that was free a moment ago on 127.0.0.1.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	require.NoError(t, l.Close())
	return port
}

// startNode runs minikubelet, node edge1 on the embedded fake runtime with
// the web pod of webManifests, ports on 127.0.0.1 and no healthz port (so
// that tests running at once take no fixed port), with args added, until
// the test ends; it returns what minikubelet prints.
func startNode(t *testing.T, args ...string) *syncBuffer {
	t.Helper()
	dir := t.TempDir()
	manifests := webManifests(t, dir)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	out := &syncBuffer{}
	args = append([]string{"--node-name", "edge1", "--root-dir", filepath.Join(dir, "root"), "--pod-manifest-path", manifests,
		"--eviction-hard", "", "--address", "127.0.0.1", "--healthz-port", "0"}, args...)
	go func() { done <- run(ctx, args, out, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	return out
}

// The read-only server serves the pods, the node, health and the
// Prometheus metrics of examples/prometheus under upstream's names.
func TestHTTPServer(t *testing.T) {
	port := freePort(t)
	out := startNode(t, "--read-only-port", port, "--port", "0")
	base := "http://127.0.0.1:" + port
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	wants := []string{
		"kubelet_running_pods 1\n",
		`kubelet_running_containers{container_state="running"} 1` + "\n",
		`kubeletkit_pods{phase="Running"} 1` + "\n",
		"kubeletkit_pleg_healthy 1\n",
		"# TYPE kubelet_pleg_relist_duration_seconds histogram\n",
		"# TYPE kubelet_pleg_relist_interval_seconds histogram\n",
		"# TYPE kubelet_pleg_last_seen_seconds gauge\n",
		"# TYPE kubelet_pleg_discard_events counter\n",
		"kubelet_pod_start_duration_seconds_count 1\n",
		`kubelet_pod_worker_duration_seconds_count{operation_type="create"}`,
		`kubeletkit_events_total{reason="Started",type="Normal"} 1` + "\n",
		// The DRA manager's claims in use, which upstream's e2e_node DRA
		// specs read in their cleanup: "<any>" is there at 0.
		`dra_resource_claims_in_use{driver_name="<any>"} 0` + "\n",
	}
	all := func(body string) bool {
		for _, want := range wants {
			if !strings.Contains(body, want) {
				return false
			}
		}
		return strings.Contains(out.String(), "web-edge1")
	}
	// The agent's real clock: poll until the pod has run and every
	// measurement (each is taken at its own step of the start) says so.
	var code int
	var body string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body = get("/metrics")
		if code == http.StatusOK && all(body) {
			break
		}
		if !time.Now().Before(deadline) {
			break
		}
	}
	assert.Contains(t, out.String(), "web-edge1", "a line for the pod")
	for _, want := range wants {
		assert.Contains(t, body, want)
	}
	assert.NotContains(t, body, "prober_probe_total", "on /metrics/probes alone, as upstream")
	code, body = get("/metrics/probes")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "# TYPE process_start_time_seconds gauge\n", "the probe metrics' own registry")
	// The cAdvisor metrics from the runtime's CRI stats (the embedded
	// fake's scripted usage), the pod's own and its container's, and the
	// machine's.
	code, body = get("/metrics/cadvisor")
	assert.Equal(t, http.StatusOK, code)
	ctr := `\{container="web",cpu="total",id="[0-9a-f]{64}",image="busybox:1.36",name="[0-9a-f]{64}",namespace="default",pod="web-edge1"\}`
	pod := `\{container="",id="[0-9a-f]{64}",image="",name="",namespace="default",pod="web-edge1"\}`
	assert.Regexp(t, `\ncontainer_cpu_usage_seconds_total`+ctr+` \S+ \d+\n`, body)
	assert.Regexp(t, `\ncontainer_memory_working_set_bytes`+pod+` \S+ \d+\n`, body)
	assert.Regexp(t, `\nmachine_cpu_cores\{boot_id="[^"]*",machine_id="[^"]*",system_uuid="[^"]*"\} [1-9]`, body)
	assert.Contains(t, body, "\ncontainer_scrape_error 0\n")
	assert.Contains(t, body, "\nmachine_scrape_error 0\n")
	code, body = get("/healthz")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "ok", body)
	code, body = get("/pods")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"name":"web-edge1"`)
	code, body = get("/node")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, `"name": "edge1"`)
}
