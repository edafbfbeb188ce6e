package podsync_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

// These tests are the Syncer's side of container configs (package
// containerconfig tests how they are built): a config that cannot be built
// holds its container in CreateContainerConfigError with upstream's
// message, and what the builder keeps about a pod goes with RemovePod.

// objects is a configMap and secret getter over maps, keyed by
// namespace/name, counting its lookups.
type objects struct {
	configMaps map[string]*v1.ConfigMap
	secrets    map[string]*v1.Secret
	lookups    int
}

func (o *objects) GetConfigMap(_ context.Context, ns, name string) (*v1.ConfigMap, error) {
	o.lookups++
	if cm, ok := o.configMaps[ns+"/"+name]; ok {
		return cm, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmap"}, name)
}

func (o *objects) GetSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	o.lookups++
	if s, ok := o.secrets[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secret"}, name)
}

func keyRef(kind, name, key string) *v1.EnvVarSource {
	ref := v1.LocalObjectReference{Name: name}
	if kind == "secret" {
		return &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: ref, Key: key}}
	}
	return &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: ref, Key: key}}
}

func TestEnvReferenceFailureIsCreateContainerConfigError(t *testing.T) {
	objs := &objects{
		configMaps: map[string]*v1.ConfigMap{"default/cfg": {
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"},
			Data:       map[string]string{"MODE": "fast", "LEVEL": "3"},
		}},
		secrets: map[string]*v1.Secret{"default/creds": {
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "creds"},
			Data:       map[string][]byte{"USER": []byte("admin")},
		}},
	}
	h := newHarness(t)
	s, err := podsync.New(podsync.Options{Runtime: h.rt, Recorder: h.rec,
		Config: containerconfig.Options{LogRoot: t.TempDir(), ConfigMaps: objs, Secrets: objs}})
	require.NoError(t, err)
	c := ctr("app")
	c.Env = []v1.EnvVar{
		{Name: "A", ValueFrom: keyRef("configMap", "cfg", "MODE")},
		{Name: "B", ValueFrom: keyRef("configMap", "cfg", "LEVEL")},
		{Name: "C", ValueFrom: keyRef("secret", "creds", "NOPE")},
	}
	pod := newPod(v1.RestartPolicyAlways, nil, c)
	res := s.SyncPod(context.Background(), pod, h.status(pod))
	st := step(t, res, "app")
	require.ErrorIs(t, st.Err, podsync.ErrCreateContainerConfig)
	assert.Equal(t, podsync.ReasonCreateContainerConfigError, st.Reason)
	assert.Equal(t, "couldn't find key NOPE in Secret default/creds", st.Message, "upstream's message, no more")
	assert.Contains(t, h.rec.Strings(), "Warning Failed Error: couldn't find key NOPE in Secret default/creds")
	assert.Equal(t, 2, objs.lookups, "each object is looked up once per container")
	assert.Empty(t, h.rt.CallsOf(fake.CreateContainer))

	// Once the key exists, the container starts.
	objs.secrets["default/creds"].Data["NOPE"] = []byte("now")
	require.NoError(t, s.SyncPod(context.Background(), pod, h.status(pod)).Err())
}

// failingMounts is a volume manager whose mounts fail with err.
type failingMounts struct{ err error }

func (failingMounts) VolumeHostPaths(*v1.Pod) (map[string]string, error) { return nil, nil }

func (m failingMounts) Mounts(*v1.Pod, *v1.Container) ([]*runtimeapi.Mount, error) { return nil, m.err }

// subPathError is an error with a status message, as volume.SubPathError.
type subPathError struct{ detail, msg string }

func (e subPathError) Error() string         { return e.detail }
func (e subPathError) StatusMessage() string { return e.msg }

func TestMountErrorStatusMessage(t *testing.T) {
	h := newHarness(t)
	vols := failingMounts{err: fmt.Errorf("container app: volumeMount data: %w", subPathError{
		detail: `prepare subPath: subPath "logs": symlink logs points outside the volume`,
		msg:    `failed to prepare subPath for volumeMount "data" of container "app"`,
	})}
	s, err := podsync.New(podsync.Options{Runtime: h.rt, Recorder: h.rec, Config: containerconfig.Options{LogRoot: t.TempDir(), Volumes: vols}})
	require.NoError(t, err)
	c := ctr("app")
	c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "logs"}}
	pod := newPod(v1.RestartPolicyAlways, nil, c)
	st := step(t, s.SyncPod(context.Background(), pod, h.status(pod)), "app")
	require.ErrorIs(t, st.Err, podsync.ErrCreateContainerConfig)
	assert.Equal(t, podsync.ReasonCreateContainerConfigError, st.Reason)
	assert.Equal(t, `failed to prepare subPath for volumeMount "data" of container "app"`, st.Message, "upstream's message, no host detail")
	assert.Contains(t, h.rec.Strings(), `Warning Failed Error: failed to prepare subPath for volumeMount "data" of container "app"`)
	assert.ErrorContains(t, st.Err, "points outside the volume", "the detail stays in the error")
	assert.Empty(t, h.rt.CallsOf(fake.CreateContainer))
}

// The image's user comes from the Runtime when Config.Images is nil.
func TestRunAsNonRootHoldsTheContainer(t *testing.T) {
	h := newHarness(t)
	yes := true
	c := ctr("app")
	c.SecurityContext = &v1.SecurityContext{RunAsNonRoot: &yes}
	pod := newPod(v1.RestartPolicyAlways, nil, c)
	st := step(t, h.sync(pod), "app")
	require.ErrorIs(t, st.Err, podsync.ErrCreateContainerConfig)
	assert.Equal(t, podsync.ReasonCreateContainerConfigError, st.Reason)
	assert.Equal(t, `container has runAsNonRoot and image will run as root (pod: "web_default(uid-1)", container: app)`, st.Message)
	assert.NotEmpty(t, h.rt.CallsOf(fake.ImageStatus))
	assert.Empty(t, h.rt.CallsOf(fake.CreateContainer))
}

// devicesFunc is a ContainerDevices hook for tests.
type devicesFunc func(ctx context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error

func (f devicesFunc) ApplyDevices(ctx context.Context, pod *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error {
	return f(ctx, pod, c, cfg)
}

func TestContainerDevices(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"applied", nil},
		{"refused", errors.New("device plugin PreStartContainer rpc failed with err: not ready")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			var seen []string
			s, err := podsync.New(podsync.Options{Runtime: h.rt, Recorder: h.rec, Config: containerconfig.Options{LogRoot: t.TempDir(),
				Devices: devicesFunc(func(_ context.Context, _ *v1.Pod, c *v1.Container, cfg *runtimeapi.ContainerConfig) error {
					seen = append(seen, c.Name)
					if tc.err != nil {
						return tc.err
					}
					cfg.Devices = append(cfg.Devices, &runtimeapi.Device{ContainerPath: "/dev/gpu0", HostPath: "/dev/gpu0", Permissions: "rw"})
					return nil
				})}})
			require.NoError(t, err)
			pod := newPod(v1.RestartPolicyAlways, nil, ctr("app"))
			st := step(t, s.SyncPod(context.Background(), pod, h.status(pod)), "app")
			assert.Equal(t, []string{"app"}, seen)
			if tc.err != nil {
				require.ErrorIs(t, st.Err, podsync.ErrCreateContainerConfig)
				assert.Equal(t, podsync.ReasonCreateContainerConfigError, st.Reason)
				assert.Empty(t, h.rt.CallsOf(fake.CreateContainer))
				return
			}
			require.NoError(t, st.Err)
			created := h.rt.CallsOf(fake.CreateContainer)
			require.Len(t, created, 1)
			assert.Equal(t, "/dev/gpu0", created[0].Request.(*runtimeapi.CreateContainerRequest).GetConfig().GetDevices()[0].GetContainerPath())
		})
	}
}

// A pod with a user namespace of its own keeps its host IDs until the
// Syncer forgets it; its sandbox's are its Config's.
func TestRemovePodFreesTheUserNamespace(t *testing.T) {
	h := newHarness(t)
	pods := t.TempDir()
	s, err := podsync.New(podsync.Options{Runtime: h.rt, Clock: h.clk, Recorder: h.rec, Config: containerconfig.Options{
		LogRoot: t.TempDir(), PodsDir: pods, UserNamespaces: func(string) bool { return true }}})
	require.NoError(t, err)
	no := false
	pod := newPod(v1.RestartPolicyAlways, nil, ctr("app"))
	pod.Spec.HostUsers = &no
	require.NoError(t, s.SyncPod(context.Background(), pod, h.status(pod)).Err())
	run := h.rt.CallsOf(fake.RunPodSandbox)[0].Request.(*runtimeapi.RunPodSandboxRequest)
	sb, err := s.Config().SandboxConfig(pod, 0)
	require.NoError(t, err)
	want := sb.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions()
	assert.Equal(t, runtimeapi.NamespaceMode_POD, want.GetMode())
	assert.Equal(t, want.GetUids()[0].GetHostId(),
		run.GetConfig().GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions().GetUids()[0].GetHostId())
	require.FileExists(t, filepath.Join(pods, "uid-1", "userns"))

	s.RemovePod(pod.UID)
	_, err = os.Stat(filepath.Join(pods, "uid-1", "userns"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
