package agenttest_test

import (
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// envFilePod is upstream's e2e "FileKeyRef" pod: the init container setup
// writes /data/config.env into the emptyDir config, and the app container's
// CONFIG_MAIN reads key from it.
func envFilePod(name, key string, optional bool) *v1.Pod {
	data := []v1.VolumeMount{{Name: "config", MountPath: "/data"}}
	setup := container("setup", "sh", "-c", `echo CONFIG_1=\'value1\' > /data/config.env`)
	setup.VolumeMounts = data
	app := container("app", "sh", "-c", "env")
	app.VolumeMounts = data
	app.Env = []v1.EnvVar{{Name: "CONFIG_MAIN", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{
		VolumeName: "config", Path: "config.env", Key: key, Optional: &optional}}}}
	p := pod(name, app)
	p.Spec.InitContainers = []v1.Container{setup}
	p.Spec.Volumes = []v1.Volume{{Name: "config", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	return p
}

// runSetup adds the pod, waits until its init container runs, and writes
// for it the file its command would write: the fake runtime runs no
// process and has no hook that writes into a host volume, so the test plays
// its part between steps, while the init container runs.
func runSetup(t *testing.T, n *agenttest.Node, p *v1.Pod, content string) {
	t.Helper()
	n.AddPod(p)
	require.True(t, n.StepUntil(time.Minute, func() bool {
		is := n.Pod("default", p.Name).Status.InitContainerStatuses
		return len(is) > 0 && is[0].Name == "setup" && is[0].State.Running != nil
	}), "setup runs")
	writeEnvFile(t, n, content)
}

// writeEnvFile writes config.env in the emptyDir's host directory, which
// the init container's CreateContainer request mounts at /data.
func writeEnvFile(t *testing.T, n *agenttest.Node, content string) {
	t.Helper()
	var dir string
	for _, m := range createRequest(t, n, "setup").GetConfig().GetMounts() {
		if m.GetContainerPath() == "/data" {
			dir = m.GetHostPath()
		}
	}
	require.NotEmpty(t, dir, "the emptyDir is mounted at /data")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.env"), []byte(content), 0o644))
}

// createRequest is the last CreateContainer request of a container.
func createRequest(t *testing.T, n *agenttest.Node, name string) *runtimeapi.CreateContainerRequest {
	t.Helper()
	var req *runtimeapi.CreateContainerRequest
	for _, c := range n.Runtime().CallsOf(fake.CreateContainer) {
		if r := c.Request.(*runtimeapi.CreateContainerRequest); r.GetConfig().GetMetadata().GetName() == name {
			req = r
		}
	}
	require.NotNil(t, req, "no CreateContainer of %s", name)
	return req
}

// TestEnvFiles: the app container's env[].valueFrom.fileKeyRef (EnvFiles, on
// by default) has the value its init container wrote in the emptyDir, read
// when the container is created; a key that is not there leaves it waiting
// in CreateContainerConfigError with upstream's message and event, unless
// the reference is optional.
func TestEnvFiles(t *testing.T) {
	for _, tc := range []struct {
		name, key string
		optional  bool
		want      map[string]string // the app's CONFIG_ variables; nil: it is not created
		wantMsg   string            // the app's waiting message
	}{
		{name: "the key's value", key: "CONFIG_1", want: map[string]string{"CONFIG_MAIN": "value1"}},
		{name: "optional missing key: left out", key: "MISSING_KEY", optional: true, want: map[string]string{}},
		{name: "missing key", key: "MISSING_KEY", wantMsg: `environment variable key "MISSING_KEY" not found in file "`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				n := agenttest.NewNode(t, agenttest.Options{Rules: []fake.Rule{
					{Name: "setup", Behavior: fake.Behavior{Outcome: fake.Exit, RunFor: 5 * time.Second}},
				}})
				runSetup(t, n, envFilePod("web", tc.key, tc.optional), "# written by setup\nCONFIG_1='value1'\n")
				if tc.wantMsg != "" {
					require.True(t, n.StepUntil(time.Minute, func() bool {
						cs := n.Pod("default", "web").Status.ContainerStatuses
						return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "CreateContainerConfigError"
					}), "%+v", n.Pod("default", "web").Status)
					msg := n.Pod("default", "web").Status.ContainerStatuses[0].State.Waiting.Message
					assert.Contains(t, msg, tc.wantMsg)
					assert.Contains(t, msg, "/config.env")
					failed := eventLines(n, "Failed")
					require.NotEmpty(t, failed)
					assert.Contains(t, failed[0], "Error: "+msg)
					assert.Empty(t, callsNamed(n, "app"), "the app is never created")
					return
				}
				require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "web").Status.Phase == v1.PodRunning }),
					"%+v", n.Pod("default", "web").Status)
				got := map[string]string{}
				for _, kv := range createRequest(t, n, "app").GetConfig().GetEnvs() {
					if kv.GetKey() == "CONFIG_MAIN" {
						got[kv.GetKey()] = string(kv.GetValue())
					}
				}
				assert.Equal(t, tc.want, got)
			})
		})
	}
}

// TestEnvFilesMissingFile: without the file (the init container wrote
// none) the app waits in CreateContainerConfigError "couldn't parse env
// file", optional or not, as upstream; once the file is there, the next
// attempt creates it with the value.
func TestEnvFilesMissingFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{Rules: []fake.Rule{
			{Name: "setup", Behavior: fake.Behavior{Outcome: fake.Exit, RunFor: time.Second}},
		}})
		p := envFilePod("web", "CONFIG_1", true)
		n.AddPod(p)
		waiting := func() *v1.ContainerStateWaiting {
			cs := n.Pod("default", "web").Status.ContainerStatuses
			if len(cs) != 1 {
				return nil
			}
			return cs[0].State.Waiting
		}
		require.True(t, n.StepUntil(time.Minute, func() bool {
			w := waiting()
			return w != nil && w.Reason == "CreateContainerConfigError"
		}), "%+v", n.Pod("default", "web").Status)
		assert.Equal(t, "couldn't parse env file", waiting().Message)
		assert.Empty(t, callsNamed(n, "app"))

		writeEnvFile(t, n, "CONFIG_1='late'\n")
		require.True(t, n.StepUntil(2*time.Minute, func() bool { return n.Pod("default", "web").Status.Phase == v1.PodRunning }),
			"%+v", n.Pod("default", "web").Status)
		var got string
		for _, kv := range createRequest(t, n, "app").GetConfig().GetEnvs() {
			if kv.GetKey() == "CONFIG_MAIN" {
				got = string(kv.GetValue())
			}
		}
		assert.Equal(t, "late", got)
	})
}

// callsNamed are the CreateContainer calls of a container.
func callsNamed(n *agenttest.Node, name string) []fake.Call {
	var out []fake.Call
	for _, c := range n.Runtime().CallsOf(fake.CreateContainer) {
		if c.Request.(*runtimeapi.CreateContainerRequest).GetConfig().GetMetadata().GetName() == name {
			out = append(out, c)
		}
	}
	return out
}

// TestEnvFilesInitAndEphemeral: an init container after the writer, and an
// ephemeral container added later (kubectl debug), read the file too, as
// upstream's e2e "should allow initContainer/ephemeralContainer to consume
// fileKeyRef".
func TestEnvFilesInitAndEphemeral(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := agenttest.NewNode(t, agenttest.Options{Rules: []fake.Rule{
			{Name: "setup", Behavior: fake.Behavior{Outcome: fake.Exit, RunFor: 5 * time.Second}},
			{Name: "use-envfile", Behavior: fake.Behavior{Outcome: fake.Exit, RunFor: time.Second}},
		}})
		p := envFilePod("web", "CONFIG_1", false)
		reader := p.Spec.Containers[0]
		reader.Name = "use-envfile"
		p.Spec.InitContainers = append(p.Spec.InitContainers, reader)
		runSetup(t, n, p, "CONFIG_1='value1'\n")
		require.True(t, n.StepUntil(time.Minute, func() bool { return n.Pod("default", "web").Status.Phase == v1.PodRunning }),
			"%+v", n.Pod("default", "web").Status)
		running := n.Pod("default", "web")
		running.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{
			Name: "debugger", Image: "busybox:1.36", Command: []string{"sleep", "10"}, Env: reader.Env,
			VolumeMounts: reader.VolumeMounts}}}
		n.UpdatePod(running)
		require.True(t, n.StepUntil(time.Minute, func() bool {
			es := n.Pod("default", "web").Status.EphemeralContainerStatuses
			return len(es) == 1 && es[0].State.Running != nil
		}), "%+v", n.Pod("default", "web").Status.EphemeralContainerStatuses)
		for _, name := range []string{"use-envfile", "app", "debugger"} {
			var got string
			for _, kv := range createRequest(t, n, name).GetConfig().GetEnvs() {
				if kv.GetKey() == "CONFIG_MAIN" {
					got = string(kv.GetValue())
				}
			}
			assert.Equal(t, "value1", got, name)
		}
	})
}
