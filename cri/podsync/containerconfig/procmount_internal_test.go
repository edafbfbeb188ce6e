package containerconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
)

func TestProcPaths(t *testing.T) {
	def, unmasked := v1.DefaultProcMount, v1.UnmaskedProcMount
	for _, pm := range []*v1.ProcMountType{nil, &def} {
		masked, readonly := procPaths(pm)
		assert.Subset(t, masked, []string{"/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"})
		assert.Equal(t, []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}, readonly)
		masked[0] = "changed"
		again, _ := procPaths(pm)
		assert.Equal(t, "/proc/asound", again[0], "each caller gets its own copy")
	}
	masked, readonly := procPaths(&unmasked)
	assert.Empty(t, masked)
	assert.Empty(t, readonly)
	assert.NotNil(t, masked, "an empty list, not none: the runtime must not apply its defaults")
}
