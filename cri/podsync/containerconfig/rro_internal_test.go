package containerconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestRecursiveReadOnly(t *testing.T) {
	enabled, ifPossible, disabled := v1.RecursiveReadOnlyEnabled, v1.RecursiveReadOnlyIfPossible, v1.RecursiveReadOnlyDisabled
	hostToContainer := v1.MountPropagationHostToContainer
	for _, tc := range []struct {
		name      string
		vm        v1.VolumeMount
		supported bool
		want      bool
		err       string
	}{
		{name: "not asked", vm: v1.VolumeMount{ReadOnly: true}},
		{name: "disabled", vm: v1.VolumeMount{ReadOnly: true, RecursiveReadOnly: &disabled}},
		{name: "enabled, supported", vm: v1.VolumeMount{ReadOnly: true, RecursiveReadOnly: &enabled}, supported: true, want: true},
		{name: "enabled, not supported", vm: v1.VolumeMount{ReadOnly: true, RecursiveReadOnly: &enabled},
			err: `volume "mnt" requested recursive read-only mode, but it is not supported by the runtime`},
		{name: "if possible, supported", vm: v1.VolumeMount{ReadOnly: true, RecursiveReadOnly: &ifPossible}, supported: true, want: true},
		{name: "if possible, not supported: plain read-only", vm: v1.VolumeMount{ReadOnly: true, RecursiveReadOnly: &ifPossible}},
		{name: "not read-only", vm: v1.VolumeMount{RecursiveReadOnly: &enabled}, supported: true,
			err: `volume "mnt" requested recursive read-only mode, but it is not read-only`},
		{name: "with propagation", vm: v1.VolumeMount{ReadOnly: true, RecursiveReadOnly: &enabled, MountPropagation: &hostToContainer}, supported: true,
			err: `volume "mnt" requested recursive read-only mode, but it is not compatible with propagation "HostToContainer"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var asked string
			b, err := New(Options{RuntimeHandler: "runc", RecursiveReadOnlyMounts: func(h string) bool { asked = h; return tc.supported }})
			require.NoError(t, err)
			tc.vm.Name, tc.vm.MountPath = "mnt", "/mnt"
			c := &v1.Container{Name: "c", VolumeMounts: []v1.VolumeMount{tc.vm}}
			mounts := []*runtimeapi.Mount{{ContainerPath: "/mnt", HostPath: "/host", Readonly: tc.vm.ReadOnly}}
			err = b.recursiveReadOnly(&v1.Pod{}, c, mounts)
			if tc.err != "" {
				assert.EqualError(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, mounts[0].GetRecursiveReadOnly())
			if tc.vm.RecursiveReadOnly != nil && *tc.vm.RecursiveReadOnly != disabled {
				assert.Equal(t, "runc", asked, "the handler's support")
			}
		})
	}
}
