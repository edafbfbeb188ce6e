package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func crashing(uid string, restarts int32, state v1.ContainerState) *v1.Pod {
	started := false
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "crash-n1", UID: types.UID("uid-" + uid)},
		Status: v1.PodStatus{
			Phase: v1.PodRunning, PodIP: "10.0.0.1", StartTime: &metav1.Time{Time: time.Now()},
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [crash]"}},
			ContainerStatuses: []v1.ContainerStatus{{
				Name: "crash", State: state, RestartCount: restarts, Started: &started, Image: "busybox:1", ContainerID: "containerd://" + uid,
			}},
		},
	}
}

func backOff(p *v1.Pod) v1.ContainerState {
	return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
		Message: "back-off 20s restarting failed container=crash pod=crash-n1_default(" + string(p.UID) + ")"}}
}

func TestViewLeavesOutIdentity(t *testing.T) {
	a, b := crashing("a", 2, v1.ContainerState{}), crashing("b", 2, v1.ContainerState{})
	a.Status.ContainerStatuses[0].State, b.Status.ContainerStatuses[0].State = backOff(a), backOff(b)
	va, vb := view(a), view(b)
	assert.Equal(t, va, vb, "UIDs, container IDs, IPs and times differ; the views do not")
	assert.Equal(t, "back-off 20s restarting failed container=crash pod=crash-n1_default(<uid>)", va.Containers[0].Message)
	assert.Equal(t, "waiting:CrashLoopBackOff", va.Containers[0].State)
	assert.Equal(t, "false", va.Containers[0].Started)
	assert.True(t, va.HasPodIP)
	assert.False(t, va.HasHostIP)
}

func writeRecording(t *testing.T, dir, name string, pods ...*v1.Pod) string {
	t.Helper()
	s := Sample{Elapsed: time.Minute, Pods: map[string]*PodView{}}
	for _, p := range pods {
		s.Pods[p.Name] = view(p)
	}
	path := filepath.Join(dir, name)
	data, err := jsonIndent([]Sample{s})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

func TestCompare(t *testing.T) {
	dir := t.TempDir()
	terminated := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Error", ExitCode: 1}}
	up := writeRecording(t, dir, "up.json", crashing("a", 2, terminated))
	for _, tc := range []struct {
		name     string
		ours     *v1.Pod
		same     bool
		contains string
	}{
		{"identical", crashing("b", 2, terminated), true, "crash-n1: same\n"},
		{"a restart apart is timing", crashing("b", 3, terminated), true, "(timing) containers[0].restartCount: upstream 2, ours 3"},
		{"two restarts apart differ", crashing("b", 4, terminated), false, "containers[0].restartCount: upstream 2, ours 4"},
		{"another state differs", crashing("b", 2, v1.ContainerState{Running: &v1.ContainerStateRunning{}}), false,
			`containers[0].state: upstream "terminated:Error:exit=1:signal=0", ours "running"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ours := writeRecording(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".json", tc.ours)
			var out strings.Builder
			same, err := compare([]string{up, ours}, &out)
			require.NoError(t, err)
			assert.Equal(t, tc.same, same, out.String())
			assert.Contains(t, out.String(), tc.contains)
		})
	}
	t.Run("image pull retries are timing", func(t *testing.T) {
		waiting := func(reason, msg string) v1.ContainerState {
			return v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason, Message: msg}}
		}
		up := writeRecording(t, dir, "pull-up.json", crashing("a", 0, waiting("ErrImagePull", "connection refused")))
		ours := writeRecording(t, dir, "pull-ours.json", crashing("b", 0, waiting("ImagePullBackOff", `Back-off pulling image "x": ErrImagePull: connection refused`)))
		var out strings.Builder
		same, err := compare([]string{up, ours}, &out)
		require.NoError(t, err)
		assert.True(t, same, out.String())
		assert.Contains(t, out.String(), `(timing) containers[0].state: upstream "waiting:ErrImagePull", ours "waiting:ImagePullBackOff" (image pull retries)`)
		other := writeRecording(t, dir, "pull-other.json", crashing("b", 0, waiting("CrashLoopBackOff", "back-off")))
		same, err = compare([]string{up, other}, &out)
		require.NoError(t, err)
		assert.False(t, same, "another reason is a difference")
	})
	t.Run("a crash loop at another point of its cycle is timing", func(t *testing.T) {
		killed := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "Error", ExitCode: 137}}
		upPod := crashing("a", 4, v1.ContainerState{Running: &v1.ContainerStateRunning{}})
		upPod.Status.ContainerStatuses[0].LastTerminationState = killed
		upPod.Status.ContainerStatuses[0].Ready = true
		upPod.Status.Conditions[0] = v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}
		oursPod := crashing("b", 4, v1.ContainerState{})
		oursPod.Status.ContainerStatuses[0].State = backOff(oursPod)
		oursPod.Status.ContainerStatuses[0].LastTerminationState = killed
		up := writeRecording(t, dir, "loop-up.json", upPod)
		ours := writeRecording(t, dir, "loop-ours.json", oursPod)
		var out strings.Builder
		same, err := compare([]string{up, ours}, &out)
		require.NoError(t, err)
		assert.True(t, same, out.String())
		assert.Contains(t, out.String(), `(timing) containers[0].state: upstream "running", ours "waiting:CrashLoopBackOff" (crash-loop restarts)`)
		assert.Contains(t, out.String(), "(timing) conditions follow the crash loop's point")

		// A failed postStart hook's state is a point of the same cycle.
		hook := crashing("d", 4, v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PostStartHookError", Message: "hook failed"}})
		hook.Status.ContainerStatuses[0].LastTerminationState = killed
		same, err = compare([]string{up, writeRecording(t, dir, "loop-hook.json", hook)}, &out)
		require.NoError(t, err)
		assert.True(t, same, out.String())
		assert.Contains(t, out.String(), `ours "waiting:PostStartHookError" (crash-loop restarts)`)

		// Another last termination is a difference, and so is a container
		// that never restarted.
		oursPod.Status.ContainerStatuses[0].LastTerminationState = terminated
		other := writeRecording(t, dir, "loop-other.json", oursPod)
		same, err = compare([]string{up, other}, &out)
		require.NoError(t, err)
		assert.False(t, same)
		fresh := crashing("c", 0, v1.ContainerState{})
		fresh.Status.ContainerStatuses[0].State = backOff(fresh)
		upFresh := crashing("a", 0, v1.ContainerState{Running: &v1.ContainerStateRunning{}})
		same, err = compare([]string{writeRecording(t, dir, "fresh-up.json", upFresh), writeRecording(t, dir, "fresh-ours.json", fresh)}, &out)
		require.NoError(t, err)
		assert.False(t, same)
	})
	t.Run("an exit not yet synced is timing", func(t *testing.T) {
		oom := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}
		upPod := crashing("a", 2, oom)
		upPod.Status.ContainerStatuses[0].LastTerminationState = oom
		oursPod := crashing("b", 2, v1.ContainerState{})
		oursPod.Status.ContainerStatuses[0].State = backOff(oursPod)
		oursPod.Status.ContainerStatuses[0].LastTerminationState = oom
		var out strings.Builder
		same, err := compare([]string{writeRecording(t, dir, "ex-up.json", upPod), writeRecording(t, dir, "ex-ours.json", oursPod)}, &out)
		require.NoError(t, err)
		assert.True(t, same, out.String())
		assert.Contains(t, out.String(), `(timing) containers[0].state: upstream "terminated:OOMKilled:exit=137:signal=0", ours "waiting:CrashLoopBackOff" (crash-loop restarts: exited, not synced yet)`)
		// The other way round too; but not with another restart count,
		// nor when the back-off follows another exit.
		same, err = compare([]string{writeRecording(t, dir, "ex-ours.json", oursPod), writeRecording(t, dir, "ex-up.json", upPod)}, &out)
		require.NoError(t, err)
		assert.True(t, same, out.String())
		// Exited on one side, still running on the other (a sidecar that
		// crashes every few seconds), is timing too.
		running := crashing("c", 2, v1.ContainerState{Running: &v1.ContainerStateRunning{}})
		running.Status.ContainerStatuses[0].LastTerminationState = oom
		same, err = compare([]string{writeRecording(t, dir, "ex-run.json", running), writeRecording(t, dir, "ex-up.json", upPod)}, &out)
		require.NoError(t, err)
		assert.True(t, same, out.String())
		assert.Contains(t, out.String(), `(crash-loop restarts: exited, not synced yet)`)
		oursPod.Status.ContainerStatuses[0].RestartCount = 3
		same, err = compare([]string{writeRecording(t, dir, "ex-up.json", upPod), writeRecording(t, dir, "ex-rc.json", oursPod)}, &out)
		require.NoError(t, err)
		assert.False(t, same)
		// One cycle apart: the exited side one restart ahead of the other's
		// back-off (CI, 2026-12-03: crashloop), or the running side one
		// restart ahead of the other's exit (sidecar-crash).
		ahead := crashing("d", 3, oom)
		ahead.Status.ContainerStatuses[0].LastTerminationState = oom
		behind := crashing("e", 2, v1.ContainerState{})
		behind.Status.ContainerStatuses[0].State = backOff(behind)
		behind.Status.ContainerStatuses[0].LastTerminationState = oom
		same, err = compare([]string{writeRecording(t, dir, "cy-up.json", behind), writeRecording(t, dir, "cy-ours.json", ahead)}, &out)
		require.NoError(t, err)
		assert.True(t, same, out.String())
		restarted := crashing("f", 3, v1.ContainerState{Running: &v1.ContainerStateRunning{}})
		restarted.Status.ContainerStatuses[0].LastTerminationState = oom
		same, err = compare([]string{writeRecording(t, dir, "cy-up2.json", upPod), writeRecording(t, dir, "cy-ours2.json", restarted)}, &out)
		require.NoError(t, err)
		assert.True(t, same, out.String())
		// Two cycles apart is not timing.
		far := crashing("g", 4, v1.ContainerState{Running: &v1.ContainerStateRunning{}})
		far.Status.ContainerStatuses[0].LastTerminationState = oom
		same, err = compare([]string{writeRecording(t, dir, "cy-up3.json", upPod), writeRecording(t, dir, "cy-ours3.json", far)}, &out)
		require.NoError(t, err)
		assert.False(t, same, out.String())
		oursPod.Status.ContainerStatuses[0].RestartCount = 2
		oursPod.Status.ContainerStatuses[0].LastTerminationState = terminated
		same, err = compare([]string{writeRecording(t, dir, "ex-up.json", upPod), writeRecording(t, dir, "ex-other.json", oursPod)}, &out)
		require.NoError(t, err)
		assert.False(t, same)
	})
	t.Run("back-offs one restart apart are timing", func(t *testing.T) {
		upPod := crashing("a", 3, v1.ContainerState{})
		upPod.Status.ContainerStatuses[0].State = backOff(upPod)
		oursPod := crashing("b", 4, v1.ContainerState{})
		oursPod.Status.ContainerStatuses[0].State = backOff(oursPod)
		oursPod.Status.ContainerStatuses[0].State.Waiting.Message = strings.Replace(oursPod.Status.ContainerStatuses[0].State.Waiting.Message, "20s", "40s", 1)
		var out strings.Builder
		same, err := compare([]string{writeRecording(t, dir, "bo-up.json", upPod), writeRecording(t, dir, "bo-ours.json", oursPod)}, &out)
		require.NoError(t, err)
		assert.True(t, same, out.String())
		assert.Contains(t, out.String(), "(timing) containers[0].message")
		// With the same restart count, another delay is a difference.
		oursPod.Status.ContainerStatuses[0].RestartCount = 3
		same, err = compare([]string{writeRecording(t, dir, "bo-up.json", upPod), writeRecording(t, dir, "bo-same.json", oursPod)}, &out)
		require.NoError(t, err)
		assert.False(t, same)
	})
	_, err := compare([]string{up}, &strings.Builder{})
	assert.ErrorContains(t, err, "want two recordings")
	_, err = compare([]string{up, filepath.Join(dir, "missing.json")}, &strings.Builder{})
	assert.Error(t, err)
}

func TestResizes(t *testing.T) {
	dir := t.TempDir()
	patch := `{"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"400m"}}}]}}`
	require.NoError(t, os.WriteFile(filepath.Join(dir, "r.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: r\n  annotations:\n"+
		"    fidelity.kubeletkit.io/resize-after: 20s\n    fidelity.kubeletkit.io/resize: '"+patch+"'\n"), 0o644))
	ds, err := readDeletions(dir)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	assert.Equal(t, 20*time.Second, ds[0].after)
	assert.JSONEq(t, patch, string(ds[0].resize))

	// Through the API server: a strategic merge patch of the resize
	// subresource.
	var method, path, ctype, body string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		method, path, ctype, body = r.Method, r.URL.Path, r.Header.Get("Content-Type"), string(b)
		_, _ = w.Write([]byte("{}"))
	}))
	defer srv.Close()
	require.NoError(t, ds[0].run(srv.Client(), apiFlags{server: srv.URL}))
	assert.Equal(t, http.MethodPatch, method)
	assert.Equal(t, "/api/v1/namespaces/default/pods/r/resize", path)
	assert.Equal(t, "application/strategic-merge-patch+json", ctype)
	assert.JSONEq(t, patch, body)
	// A static pod is not resized: its manifest stays.
	require.NoError(t, ds[0].run(nil, apiFlags{}))
	assert.FileExists(t, filepath.Join(dir, "r.yaml"))

	require.NoError(t, os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: b\n  annotations:\n"+
		"    fidelity.kubeletkit.io/resize-after: 1s\n    fidelity.kubeletkit.io/resize: 'not json'\n"), 0o644))
	_, err = readDeletions(dir)
	assert.ErrorContains(t, err, "bad.yaml")
}

func TestDeletionsAndTheirTimeline(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	write("a.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations: {fidelity.kubeletkit.io/delete-after: 20s}\n")
	write("b.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: b, namespace: ns}\n")
	ds, err := readDeletions(dir)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	assert.Equal(t, deletion{path: filepath.Join(dir, "a.yaml"), namespace: "default", name: "a", after: 20 * time.Second}, ds[0])

	// A static pod is deleted by removing its manifest.
	require.NoError(t, ds[0].run(nil, apiFlags{}))
	assert.NoFileExists(t, filepath.Join(dir, "a.yaml"))
	assert.FileExists(t, filepath.Join(dir, "b.yaml"))

	write("bad.yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: c\n  annotations: {fidelity.kubeletkit.io/delete-after: soon}\n")
	_, err = readDeletions(dir)
	assert.ErrorContains(t, err, "bad.yaml")

	// The timeline says when the pod began terminating and when it went.
	running := &PodView{Phase: "Running"}
	deleting := &PodView{Phase: "Running", Deleting: true}
	samples := []Sample{
		{Elapsed: time.Second, Pods: map[string]*PodView{"a": running}},
		{Elapsed: 2 * time.Second, Pods: map[string]*PodView{"a": deleting}},
		{Elapsed: 3 * time.Second, Pods: map[string]*PodView{}},
	}
	tl := timeline(samples, "a")
	assert.Equal(t, 2*time.Second, tl["deleting"])
	assert.Equal(t, 3*time.Second, tl["gone"])
	assert.Equal(t, []string{"a"}, everPod(samples, nil))
}
