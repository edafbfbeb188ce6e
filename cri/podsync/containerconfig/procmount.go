package containerconfig

import (
	"path/filepath"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// maskedPaths are the paths of /proc and /sys a container does not see, as
// upstream asks the runtime for them: the default list, plus each CPU's
// thermal_throttle directory where this machine has one.
var maskedPaths = sync.OnceValue(func() []string {
	paths := []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
		"/sys/devices/virtual/powercap",
	}
	throttle, _ := filepath.Glob("/sys/devices/system/cpu/cpu[0-9]*/thermal_throttle")
	return append(paths, throttle...)
})

// readonlyPaths are the paths of /proc a container sees read-only.
var readonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}

// procPaths returns the masked and read-only paths of a container whose
// procMount is pm: the defaults, or none for Unmasked (which the API server
// allows only in a user namespace).
func procPaths(pm *v1.ProcMountType) (masked, readonly []string) {
	if pm != nil && *pm == v1.UnmaskedProcMount {
		return []string{}, []string{}
	}
	return slices.Clone(maskedPaths()), slices.Clone(readonlyPaths)
}
