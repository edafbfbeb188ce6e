package apiserver_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/eviction/evictiontest"
	"github.com/kubeletkit/kubeletkit/examples/apiserver"
	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/status/node/nodetest"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/volume"
)

func TestJoinRejectsBadOptions(t *testing.T) {
	client := fake.NewClientset()
	tests := []struct {
		name   string
		client bool
		node   string
		opts   apiserver.JoinOptions
		want   string
	}{
		{"no client", false, "n1", apiserver.JoinOptions{}, "client is nil"},
		{"no node name", true, " ", apiserver.JoinOptions{}, "node name is empty"},
		{"negative lease", true, "n1", apiserver.JoinOptions{NodeLeaseDuration: -time.Second}, "NodeLeaseDuration -1s"},
		{"lease not in seconds", true, "n1", apiserver.JoinOptions{NodeLeaseDuration: 1500 * time.Millisecond}, "NodeLeaseDuration 1.5s"},
		{"labels without registration", true, "n1", apiserver.JoinOptions{SkipNodeRegistration: true, NodeLabels: map[string]string{"a": "b"}}, "SkipNodeRegistration skips it"},
		{"taints without registration", true, "n1", apiserver.JoinOptions{SkipNodeRegistration: true, NodeTaints: []v1.Taint{{Key: "a", Effect: v1.TaintEffectNoSchedule}}}, "SkipNodeRegistration skips it"},
		{"provider ID without registration", true, "n1", apiserver.JoinOptions{SkipNodeRegistration: true, ProviderID: "p://1"}, "SkipNodeRegistration skips it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c kubernetes.Interface
			if tt.client {
				c = client
			}
			_, err := apiserver.Join(c, tt.node, tt.opts)
			require.ErrorIs(t, err, apiserver.ErrInvalidArgument)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
	j, err := apiserver.Join(client, " Node-1", apiserver.JoinOptions{SkipNodeRegistration: true, NodeLeaseDuration: 10 * time.Second})
	require.NoError(t, err)
	assert.Equal(t, "node-1", j.NodeName(), "lower-cased and trimmed, as the agent does")
}

func TestApply(t *testing.T) {
	own := volume.Sources{ConfigMaps: &volume.StaticSources{}}
	tests := []struct {
		name        string
		opts        agent.Options
		wantErr     bool
		wantNode    string
		ownVolumes  bool
		wantVolumes bool // the API server's
	}{
		{name: "empty options", wantNode: "n1", wantVolumes: true},
		{name: "the same node name", opts: agent.Options{NodeName: "N1"}, wantNode: "N1", wantVolumes: true},
		{name: "volume sources of the caller's", opts: agent.Options{Cluster: agent.ClusterOptions{VolumeSources: own}}, wantNode: "n1", ownVolumes: true},
		{name: "another node name", opts: agent.Options{NodeName: "n2"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j, err := apiserver.Join(fake.NewClientset(), "n1", apiserver.JoinOptions{NodeLeaseDuration: 20 * time.Second})
			require.NoError(t, err)
			opts := tt.opts
			err = j.Apply(&opts)
			if tt.wantErr {
				require.ErrorIs(t, err, apiserver.ErrInvalidArgument)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantNode, opts.NodeName)
			assert.NotNil(t, opts.Cluster.Updates)
			assert.IsType(t, &apiserver.StatusSink{}, opts.Cluster.StatusSink)
			assert.IsType(t, &apiserver.NodeSink{}, opts.Cluster.NodeStatusSink)
			assert.IsType(t, &apiserver.NodeSink{}, opts.Cluster.Leases)
			assert.Equal(t, 20*time.Second, opts.Cluster.LeaseDuration)
			assert.IsType(t, &apiserver.MirrorPods{}, opts.Cluster.MirrorPods)
			assert.NotNil(t, opts.Cluster.Recorder)
			assert.IsType(t, &apiserver.Services{}, opts.Cluster.Services)
			assert.IsType(t, &apiserver.ResourceClaims{}, opts.Cluster.ResourceClaims)
			assert.IsType(t, &apiserver.ResourceSlices{}, opts.Cluster.ResourceSlices)
			assert.True(t, opts.Cluster.ReportHostIPs)
			if tt.ownVolumes {
				assert.Equal(t, own, opts.Cluster.VolumeSources)
			}
			if tt.wantVolumes {
				assert.IsType(t, &apiserver.WatchingSources{}, opts.Cluster.VolumeSources.ConfigMaps)
				assert.IsType(t, &apiserver.WatchingSources{}, opts.Cluster.VolumeSources.Secrets)
				assert.IsType(t, &apiserver.WatchingSources{}, opts.Cluster.VolumeSources.Tokens)
			}
		})
	}
}

// fakeAgent stands for the agent in Run: run is its Run.
type fakeAgent struct {
	name string
	run  func(ctx context.Context) error
}

func (a *fakeAgent) NodeName() string              { return a.name }
func (a *fakeAgent) Run(ctx context.Context) error { return a.run(ctx) }

// allowAll answers every access review with allowed, or denied for the
// resource deny.
func allowAll(client *fake.Clientset, deny string) {
	client.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview).DeepCopy()
		r.Status.Allowed = r.Spec.ResourceAttributes.Resource != deny
		return true, r, nil
	})
}

// joined joins n1 to client and applies it to opts.
func joined(t *testing.T, client *fake.Clientset, opts *agent.Options) *apiserver.Joined {
	t.Helper()
	return joinedWith(t, client, apiserver.JoinOptions{}, opts)
}

// joinedWith joins n1 to client with jopts and applies it to opts.
func joinedWith(t *testing.T, client kubernetes.Interface, jopts apiserver.JoinOptions, opts *agent.Options) *apiserver.Joined {
	t.Helper()
	j, err := apiserver.Join(client, "n1", jopts)
	require.NoError(t, err)
	require.NoError(t, j.Apply(opts))
	return j
}

func TestRunRefusesAnotherAgentOrASecondRun(t *testing.T) {
	client := fake.NewClientset()
	allowAll(client, "")
	var opts agent.Options
	j := joined(t, client, &opts)
	err := j.Run(t.Context(), &fakeAgent{name: "n2", run: func(context.Context) error { return nil }})
	require.ErrorIs(t, err, apiserver.ErrInvalidArgument)
	assert.Contains(t, err.Error(), `the agent runs node "n2"`)

	require.NoError(t, j.Run(t.Context(), &fakeAgent{name: "n1", run: func(context.Context) error { return nil }}))
	require.ErrorIs(t, j.Run(t.Context(), &fakeAgent{name: "n1", run: func(context.Context) error { return nil }}), apiserver.ErrInvalidArgument)
}

// A permission the node lacks stops Run before the agent starts.
func TestRunChecksAccessFirst(t *testing.T) {
	client := fake.NewClientset()
	allowAll(client, "leases")
	var opts agent.Options
	j := joined(t, client, &opts)
	started := false
	err := j.Run(t.Context(), &fakeAgent{name: "n1", run: func(context.Context) error { started = true; return nil }})
	require.ErrorIs(t, err, apiserver.ErrAccessDenied)
	assert.Contains(t, err.Error(), "leases.coordination.k8s.io")
	assert.False(t, started, "the agent ran")
}

// The agent's error ends the pod source and the watches, and is Run's.
func TestRunEndsEverythingOnTheAgentsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		client := fake.NewClientset()
		allowAll(client, "")
		var opts agent.Options
		j := joined(t, client, &opts)
		boom := errors.New("boom")
		err := j.Run(context.Background(), &fakeAgent{name: "n1", run: func(ctx context.Context) error {
			<-opts.Cluster.Updates // the pod source's first SET
			return boom
		}})
		require.ErrorIs(t, err, boom)
		assert.Contains(t, err.Error(), "run node n1: agent: boom")
		// synctest.Test fails if a goroutine Run started is still there.
	})
}

// Events reach the API server while Run runs, and only then; the pod
// source sends the node's pods on Updates.
func TestRunRecordsEventsAndSendsPods(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := apiPod("default", "web", "u1", "n1")
		client := fake.NewClientset(pod) // the fake ignores the spec.nodeName selector
		allowAll(client, "")
		var opts agent.Options
		j := joined(t, client, &opts)
		opts.Cluster.Recorder.Eventf(pod, v1.EventTypeNormal, "Early", "before Run")

		ctx, cancel := context.WithCancel(context.Background())
		var got syncloop.PodUpdate
		err := j.Run(ctx, &fakeAgent{name: "n1", run: func(ctx context.Context) error {
			got = <-opts.Cluster.Updates
			opts.Cluster.Recorder.Eventf(pod, v1.EventTypeNormal, "Started", "Started container %s", "web")
			synctest.Wait() // the broadcaster writes the event
			cancel()
			<-ctx.Done()
			return nil
		}})
		require.NoError(t, err)
		opts.Cluster.Recorder.Eventf(pod, v1.EventTypeNormal, "Late", "after Run")
		synctest.Wait()

		assert.Equal(t, syncloop.OpSet, got.Op)
		require.Len(t, got.Pods, 1)
		assert.Equal(t, "web", got.Pods[0].Name)

		evs, err := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		require.NoError(t, err)
		var reasons []string
		for _, e := range evs.Items {
			reasons = append(reasons, e.Reason)
			assert.Equal(t, v1.EventSource{Component: apiserver.EventComponent, Host: "n1"}, e.Source)
		}
		assert.Equal(t, []string{"Started"}, reasons)
	})
}

// SyncMirrorPods creates the mirror pod of a static pod, as Sync does.
func TestSyncMirrorPods(t *testing.T) {
	client := fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}})
	m, err := apiserver.NewMirrorPods(client, "n1", apiserver.MirrorPodsOptions{SyncTimeout: time.Minute})
	require.NoError(t, err)
	var mp agent.MirrorPods = m
	require.NoError(t, mp.SyncMirrorPods(t.Context(), []*v1.Pod{staticPod("default", "web-n1", "h1", "n1")}, nil))
	got, err := client.CoreV1().Pods("default").Get(t.Context(), "web-n1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "h1", got.Annotations[podspec.ConfigMirrorAnnotation])
}

// staticAgentOptions are the options of an agent on the fake runtime, in
// a synctest bubble, with one static pod, "static" (static-n1 once
// named for the node).
func staticAgentOptions(t *testing.T) agent.Options {
	manifests := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(manifests, "static.yaml"), []byte(`
apiVersion: v1
kind: Pod
metadata: {name: static}
spec:
  containers:
  - {name: app, image: busybox, command: [sleep, "3600"]}
`), 0o600))
	// PollManifests: inotify's reader would block in a read the bubble
	// cannot see past.
	return agent.Options{
		RootDir: t.TempDir(),
		Sources: agent.SourceOptions{ManifestPath: manifests, PollManifests: true},
		Node: agent.NodeOptions{HostIPs: []string{"192.0.2.10"}, Machine: nodetest.Machine{Cap: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"), v1.ResourcePods: resource.MustParse("110")}}},
		Security: agent.SecurityOptions{NoMounts: true},
		Eviction: agent.EvictionOptions{Stats: &evictiontest.Stats{}},
		Rand:     func() float64 { return 0 },
	}
}

// An agent on the fake runtime joined to a fake API server: the Node
// registers and turns Ready, its lease is held, a pod bound to the node
// runs with its status (hostIP included) on the API server, a static pod
// gets a mirror pod, and the pod's events are written.
func TestJoinedAgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pod := apiPod("default", "web", "u1", "n1")
		client := fake.NewClientset(pod)
		allowAll(client, "")
		opts := staticAgentOptions(t)
		j := joined(t, client, &opts)
		a, err := agent.New(opts)
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- j.Run(ctx, a) }()

		time.Sleep(30 * time.Second) // the fake time of the bubble: node status every 10s, relist every 1s
		synctest.Wait()
		ctx2 := context.Background()
		assertRegisteredReadyLeased(t, client)

		got, err := client.CoreV1().Pods("default").Get(ctx2, "web", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, v1.PodRunning, got.Status.Phase)
		assert.Equal(t, "192.0.2.10", got.Status.HostIP)
		mirror, err := client.CoreV1().Pods("default").Get(ctx2, "static-n1", metav1.GetOptions{})
		require.NoError(t, err)
		assert.NotEmpty(t, mirror.Annotations[podspec.ConfigMirrorAnnotation])
		assert.Contains(t, eventReasons(client, "web"), "Started")

		// A label another client puts on the Node counts for the next pod's
		// nodeSelector at once (the node watch), not at the next status
		// update 10s later: upstream's cluster suite labels a node and
		// creates such a pod right after.
		nd, err := client.CoreV1().Nodes().Get(ctx2, "n1", metav1.GetOptions{})
		require.NoError(t, err)
		nd.Labels["e2e-label"] = "42"
		_, err = client.CoreV1().Nodes().Update(ctx2, nd, metav1.UpdateOptions{})
		require.NoError(t, err)
		synctest.Wait()
		selected := apiPod("default", "selected", "u2", "n1")
		selected.Spec.NodeSelector = map[string]string{"e2e-label": "42"}
		_, err = client.CoreV1().Pods("default").Create(ctx2, selected, metav1.CreateOptions{})
		require.NoError(t, err)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		got, err = client.CoreV1().Pods("default").Get(ctx2, "selected", metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, v1.PodRunning, got.Status.Phase, "admitted: %s", got.Status.Message)

		cancel()
		require.NoError(t, <-done)
	})
}

// assertRegisteredReadyLeased asserts that the API server client talks to
// holds the Node n1, Ready, and its lease.
func assertRegisteredReadyLeased(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	nd, err := client.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	require.NoError(t, err, "the Node")
	var ready v1.ConditionStatus
	for _, c := range nd.Status.Conditions {
		if c.Type == v1.NodeReady {
			ready = c.Status
		}
	}
	assert.Equal(t, v1.ConditionTrue, ready)
	lease, err := client.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), "n1", metav1.GetOptions{})
	require.NoError(t, err, "the lease")
	assert.Equal(t, "n1", *lease.Spec.HolderIdentity)
}

// eventReasons returns the reasons of the events written about the pod
// name: the events' writes, not the stored events, since the fake time of a
// bubble stands still and events recorded at one instant get one name.
func eventReasons(client *fake.Clientset, name string) []string {
	var reasons []string
	for _, act := range client.Actions() {
		if c, ok := act.(k8stesting.CreateAction); ok && act.GetResource().Resource == "events" {
			if e := c.GetObject().(*v1.Event); e.InvolvedObject.Name == name {
				reasons = append(reasons, e.Reason)
			}
		}
	}
	return reasons
}
