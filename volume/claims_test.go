package volume_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/volume"
	"github.com/kubeletkit/kubeletkit/volume/volumetest"
)

// boundClaim returns a claim "claim" in namespace ns bound to the
// persistent volume pv, and pv bound back to it.
func boundClaim(name, pvName string, src v1.PersistentVolumeSource) (*v1.PersistentVolumeClaim, *v1.PersistentVolume) {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid")},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: pvName},
		Status:     v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound},
	}
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: src,
			ClaimRef:               &v1.ObjectReference{Namespace: "ns", Name: name, UID: c.UID},
		},
	}
	return c, pv
}

// claimPod is pod "p" with a volume "data" of the claim "claim" that its
// container mounts at /data.
func claimPod(readOnly bool) *v1.Pod {
	p := newPod("p", v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "claim", ReadOnly: readOnly}}})
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	return p
}

// ephemeralPod is pod "p" with a generic ephemeral volume "data", whose
// claim is "p-data".
func ephemeralPod() *v1.Pod {
	p := newPod("p", v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}})
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
	return p
}

func ownedBy(c *v1.PersistentVolumeClaim, pod *v1.Pod) {
	c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr(true)}}
}

// TestClaimResolution: a claim's volume that cannot be resolved fails to
// process at once, with upstream's message, a FailedMount event and no
// set up; the pod waits (WaitForMount fails until it resolves).
func TestClaimResolution(t *testing.T) {
	hostPath := v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/srv"}}
	block := v1.PersistentVolumeBlock
	tests := []struct {
		name    string
		pod     func() *v1.Pod
		objects func(s *volume.StaticSources, pod *v1.Pod)
		noClaim bool // no claim source
		want    string
		wantErr error
	}{
		{
			name: "no claim source", pod: func() *v1.Pod { return claimPod(false) }, noClaim: true,
			want: `error processing PVC ns/claim: no source configured for claims`, wantErr: volume.ErrNoSource,
		},
		{
			name: "claim not found", pod: func() *v1.Pod { return claimPod(false) },
			want: `error processing PVC ns/claim: failed to fetch PVC from API server: persistentvolumeclaim "claim" not found`,
		},
		{
			name: "claim being deleted", pod: func() *v1.Pod { return claimPod(false) },
			objects: func(s *volume.StaticSources, _ *v1.Pod) {
				c, pv := boundClaim("claim", "pv-1", hostPath)
				c.DeletionTimestamp = &metav1.Time{Time: t0}
				s.SetPersistentVolumeClaim(c)
				s.SetPersistentVolume(pv)
			},
			want: `error processing PVC ns/claim: PVC is being deleted`,
		},
		{
			name: "claim pending", pod: func() *v1.Pod { return claimPod(false) },
			objects: func(s *volume.StaticSources, _ *v1.Pod) {
				s.SetPersistentVolumeClaim(&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim"},
					Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}})
			},
			want: `error processing PVC ns/claim: PVC is not bound`,
		},
		{
			name: "claim bound without a volume name", pod: func() *v1.Pod { return claimPod(false) },
			objects: func(s *volume.StaticSources, _ *v1.Pod) {
				c, _ := boundClaim("claim", "", hostPath)
				s.SetPersistentVolumeClaim(c)
			},
			want: `error processing PVC ns/claim: PVC has empty pvc.Spec.VolumeName`,
		},
		{
			name: "volume not found", pod: func() *v1.Pod { return claimPod(false) },
			objects: func(s *volume.StaticSources, _ *v1.Pod) {
				c, _ := boundClaim("claim", "pv-1", hostPath)
				s.SetPersistentVolumeClaim(c)
			},
			want: `error processing PVC ns/claim: failed to fetch PV pv-1 from API server: persistentvolume "pv-1" not found`,
		},
		{
			name: "volume without claimRef", pod: func() *v1.Pod { return claimPod(false) },
			objects: func(s *volume.StaticSources, _ *v1.Pod) {
				c, pv := boundClaim("claim", "pv-1", hostPath)
				pv.Spec.ClaimRef = nil
				s.SetPersistentVolumeClaim(c)
				s.SetPersistentVolume(pv)
			},
			want: `error processing PVC ns/claim: found PV object pv-1 but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim`,
		},
		{
			name: "volume bound to another claim", pod: func() *v1.Pod { return claimPod(false) },
			objects: func(s *volume.StaticSources, _ *v1.Pod) {
				c, pv := boundClaim("claim", "pv-1", hostPath)
				pv.Spec.ClaimRef.UID = "other-uid"
				s.SetPersistentVolumeClaim(c)
				s.SetPersistentVolume(pv)
			},
			want: `error processing PVC ns/claim: found PV object pv-1 but its pv.Spec.ClaimRef.UID other-uid does not point to claim.UID claim-uid`,
		},
		{
			name: "ephemeral claim not owned by the pod", pod: ephemeralPod,
			objects: func(s *volume.StaticSources, _ *v1.Pod) {
				c, pv := boundClaim("p-data", "pv-1", hostPath)
				s.SetPersistentVolumeClaim(c)
				s.SetPersistentVolume(pv)
			},
			want: `PVC ns/p-data was not created for pod ns/p (pod is not owner)`,
		},
		{
			name: "block volume in volumeMounts", pod: func() *v1.Pod { return claimPod(false) },
			objects: func(s *volume.StaticSources, _ *v1.Pod) {
				c, pv := boundClaim("claim", "pv-1", hostPath)
				pv.Spec.VolumeMode = &block
				s.SetPersistentVolumeClaim(c)
				s.SetPersistentVolume(pv)
			},
			want: `volume data has volumeMode Block, but is specified in volumeMounts`,
		},
		{
			name: "no plugin for the volume", pod: func() *v1.Pod { return claimPod(false) },
			objects: func(s *volume.StaticSources, _ *v1.Pod) {
				c, pv := boundClaim("claim", "pv-1", v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "nfs", Path: "/x"}})
				s.SetPersistentVolumeClaim(c)
				s.SetPersistentVolume(pv)
			},
			want: `unsupported: no volume plugin supports persistent volume "pv-1" of volume "data"`, wantErr: volume.ErrUnsupported,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &volume.StaticSources{}
			h := newHarness(t, func(o *volume.Options) {
				if !tt.noClaim {
					o.Sources.Claims = src
				}
			}).run()
			pod := tt.pod()
			if tt.objects != nil {
				tt.objects(src, pod)
			}
			err := h.mount(pod)
			require.Error(t, err)
			assert.Equal(t, `unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: volume "data": `+tt.want, err.Error())
			if tt.wantErr != nil {
				assert.ErrorIs(t, err, tt.wantErr)
			}
			if ev := h.rec.Events(); assert.Len(t, ev, 1) {
				assert.Equal(t, "Unable to attach or mount volumes: "+err.Error(), ev[0].Message)
			}
			assert.NoDirExists(t, volume.PodVolumesDir(h.root, pod.UID))
		})
	}
}

// TestClaimNotFoundIsNotFound: the source's NotFound reaches the caller.
func TestClaimNotFoundIsNotFound(t *testing.T) {
	h := newHarness(t, func(o *volume.Options) { o.Sources.Claims = &volume.StaticSources{} }).run()
	err := h.mount(claimPod(false))
	assert.True(t, apierrors.IsNotFound(err), err)
}

// TestLocalPersistentVolume: a local volume is bind-mounted ("ro" when the
// claim's volume is readOnly) on <pod>/volumes/kubernetes.io~local-volume/<pv>,
// which the container mounts; the pod's removal unmounts it and removes the
// directory, leaving the host's path alone. A generic ephemeral volume's
// claim owned by the pod works the same, writable.
func TestLocalPersistentVolume(t *testing.T) {
	for _, tt := range []struct {
		name     string
		pod      func() *v1.Pod
		claim    string
		readOnly bool
	}{
		{name: "claim", pod: func() *v1.Pod { return claimPod(false) }, claim: "claim"},
		{name: "read-only claim", pod: func() *v1.Pod { return claimPod(true) }, claim: "claim", readOnly: true},
		{name: "ephemeral", pod: ephemeralPod, claim: "p-data"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := &volume.StaticSources{}
			h := newHarness(t, func(o *volume.Options) { o.Sources.Claims = src }).run()
			path := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(path, "kept"), []byte("x"), 0o644))
			pod := tt.pod()
			c, pv := boundClaim(tt.claim, "local-pv", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: path}})
			ownedBy(c, pod)
			src.SetPersistentVolumeClaim(c)
			src.SetPersistentVolume(pv)

			require.NoError(t, h.mount(pod))
			dir := h.volDir(pod, volume.LocalPluginName, "local-pv")
			assert.Equal(t, filepath.Join(h.root, "pods", "uid-p", "volumes", "kubernetes.io~local-volume", "local-pv"), dir)
			opts := []string{"bind"}
			if tt.readOnly {
				opts = append(opts, "ro")
			}
			assert.Equal(t, []volumetest.MountCall{{Op: "mount", Source: path, Target: dir, Options: opts}}, h.mnt.Calls())
			mounts, err := h.m.Mounts(pod, &pod.Spec.Containers[0])
			require.NoError(t, err)
			if assert.Len(t, mounts, 1) {
				assert.Equal(t, dir, mounts[0].HostPath)
				assert.Equal(t, "/data", mounts[0].ContainerPath)
				assert.Equal(t, tt.readOnly, mounts[0].Readonly)
			}

			require.NoError(t, h.unmount(pod))
			assert.Equal(t, volumetest.MountCall{Op: "unmount", Target: dir}, h.mnt.Calls()[1])
			assert.NoDirExists(t, dir)
			assert.FileExists(t, filepath.Join(path, "kept"))
		})
	}
}

// TestHostPathPersistentVolume: a hostPath volume is used as a hostPath
// volume is (its type checked, nothing mounted), read-only when the
// claim's volume says so.
func TestHostPathPersistentVolume(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		src := &volume.StaticSources{}
		h := newHarness(t, func(o *volume.Options) { o.Sources.Claims = src }).run()
		path := filepath.Join(t.TempDir(), "made")
		c, pv := boundClaim("claim", "host-pv", v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{
			Path: path, Type: ptr(v1.HostPathDirectoryOrCreate)}})
		src.SetPersistentVolumeClaim(c)
		src.SetPersistentVolume(pv)
		pod := claimPod(readOnly)
		require.NoError(t, h.mount(pod))
		assert.DirExists(t, path)
		mounts, err := h.m.Mounts(pod, &pod.Spec.Containers[0])
		require.NoError(t, err)
		if assert.Len(t, mounts, 1) {
			assert.Equal(t, path, mounts[0].HostPath)
			assert.Equal(t, readOnly, mounts[0].Readonly)
		}
		assert.Empty(t, h.mnt.Calls())
		require.NoError(t, h.unmount(pod))
		assert.DirExists(t, path)
	}
}

// TestClaimResolvedOnce: a running pod's claim is not read again, so a
// claim deleted (or unreadable) under it does not tear its volume down;
// a pod that fails to resolve is resolved again at its next WaitForMount.
func TestClaimResolvedOnce(t *testing.T) {
	src := &volume.StaticSources{}
	h := newHarness(t, func(o *volume.Options) { o.Sources.Claims = src }).run()
	pod := claimPod(false)
	require.Error(t, h.mount(pod), "nothing to resolve yet")

	c, pv := boundClaim("claim", "local-pv", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: t.TempDir()}})
	src.SetPersistentVolumeClaim(c)
	src.SetPersistentVolume(pv)
	require.NoError(t, h.mount(pod))
	src.DeletePersistentVolumeClaim("ns", "claim")
	require.NoError(t, h.mount(pod))
	h.clk.Step(time.Second)
	assert.Len(t, h.mnt.Mounted(), 1)
}

// TestClaimVolumeAdoptedAfterRestart: a restarted Manager finds the local
// volume by its persistent volume's name and, when the pod comes back,
// adopts it rather than tearing it down and mounting it again.
func TestClaimVolumeAdoptedAfterRestart(t *testing.T) {
	src := &volume.StaticSources{}
	h1 := newHarness(t, func(o *volume.Options) { o.Sources.Claims = src }).run()
	c, pv := boundClaim("claim", "local-pv", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: t.TempDir()}})
	src.SetPersistentVolumeClaim(c)
	src.SetPersistentVolume(pv)
	pod := claimPod(false)
	require.NoError(t, h1.mount(pod))
	h1.stop()

	var active atomic.Bool
	active.Store(true)
	h2 := newHarness(t, func(o *volume.Options) {
		o.RootDir, o.Mounter, o.Sources.Claims = h1.root, h1.mnt, src
		o.ActivePod = func(types.UID) bool { return active.Load() }
	})
	h2.root = h1.root
	h2.run()
	waitFor(t, "the volumes on disk to be found", func() bool { return h2.clk.HasWaiters() })
	h2.clk.Step(time.Second)
	require.NoError(t, h2.mount(pod))
	h2.clk.Step(time.Second)
	calls := h1.mnt.Calls()
	assert.Len(t, calls, 1, "mounted once, never unmounted: %v", calls)
	require.NoError(t, h2.unmount(pod))
	assert.Empty(t, h1.mnt.Mounted())
}
