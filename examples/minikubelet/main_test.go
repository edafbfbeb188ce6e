package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--eviction-hard", "memory.available>1Gi"}, "memory.available>1Gi"},
		{[]string{"--eviction-soft", "memory.available<1Gi"}, "grace period must be specified"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"extra"}, "unexpected arguments"},
		{[]string{"--node-labels", "a=b"}, "--node-labels needs --kubeconfig"},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig"}, "kubeconfig /nonexistent/kubeconfig"},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig", "--node-labels", "novalue"}, `"novalue" is not key=value`},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig", "--node-labels", "bad key=x"}, `key "bad key"`},
		{[]string{"--register-node=false"}, "--register-node needs --kubeconfig"},
		{[]string{"--kube-api-qps", "10"}, "--kube-api-qps needs --kubeconfig"},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig", "--kube-api-burst", "0"}, "--kube-api-burst=0: both must be positive"},
		{[]string{"--image-gc-high-threshold", "70"}, "image GC low threshold 80% is above the high threshold 70%"},
		{[]string{"--minimum-image-ttl-duration", "-1s"}, "image GC minimum age -1s is negative"},
		{[]string{"--node-lease-duration-seconds", "10"}, "--node-lease-duration-seconds needs --kubeconfig"},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig", "--node-lease-duration-seconds", "0"}, "--node-lease-duration-seconds=0: must be positive"},
		{[]string{"--kubeconfig", "/nonexistent/kubeconfig", "--register-node=false", "--node-labels", "a=b"}, "--register-node=false skips"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			err := run(context.Background(), append(tt.args, "--root-dir", t.TempDir()), io.Discard, io.Discard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

// --runonce on the embedded fake runtime starts the pods, waits until they
// run and prints them.
func TestRunOnce(t *testing.T) {
	dir := t.TempDir()
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
