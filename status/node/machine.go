package node

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// DefaultMaxPods is the pods capacity upstream reports by default.
const DefaultMaxPods = 110

// LocalMachine reads the capacity and OS information of the host it runs
// on (Linux): CPUs, MemTotal from /proc/meminfo, the huge pages of each
// size the kernel offers (/sys/kernel/mm/hugepages), the size of the
// filesystem of StorageDir, machine-id, product_uuid, boot_id, kernel
// release and PRETTY_NAME of os-release. Files are read under Root, so
// tests can point it at a fake tree.
type LocalMachine struct {
	// Root is prepended to every path read. Empty means "/".
	Root string
	// MaxPods is the pods capacity. 0 means DefaultMaxPods.
	MaxPods int64
	// CPUs overrides the number of CPUs. 0 means runtime.NumCPU().
	CPUs int
	// StorageDir is a directory on the node's filesystem (upstream's is
	// the kubelet's root directory, /var/lib/kubelet): its size is the
	// ephemeral-storage capacity. Empty means no ephemeral-storage
	// reported. It is not under Root.
	StorageDir string
}

var _ Machine = LocalMachine{}

func (m LocalMachine) read(path string) (string, error) {
	b, err := os.ReadFile(filepath.Join(m.root(), path))
	if err != nil {
		return "", err
	}
	return string(bytes.TrimSpace(b)), nil
}

func (m LocalMachine) root() string {
	if m.Root == "" {
		return "/"
	}
	return m.Root
}

// Capacity implements Machine: cpu, memory, pods, hugepages-<size> (zero
// where none are reserved, as upstream reports every size the kernel
// offers) and, with StorageDir, ephemeral-storage.
func (m LocalMachine) Capacity(context.Context) (v1.ResourceList, error) {
	cpus := m.CPUs
	if cpus == 0 {
		cpus = runtime.NumCPU()
	}
	pods := m.MaxPods
	if pods == 0 {
		pods = DefaultMaxPods
	}
	mem, err := m.memTotal()
	if err != nil {
		return nil, fmt.Errorf("machine capacity: %w", err)
	}
	out := v1.ResourceList{
		v1.ResourceCPU:    *resource.NewQuantity(int64(cpus), resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(pods, resource.DecimalSI),
	}
	m.hugePages(out)
	if m.StorageDir != "" {
		size, err := storageCapacity(m.StorageDir)
		if err != nil {
			return nil, fmt.Errorf("machine capacity: ephemeral storage: %w", err)
		}
		out[v1.ResourceEphemeralStorage] = *resource.NewQuantity(size, resource.BinarySI)
	}
	return out, nil
}

// hugePages adds hugepages-<size> for each size of
// sys/kernel/mm/hugepages: the pages reserved times their size.
func (m LocalMachine) hugePages(out v1.ResourceList) {
	dirs, err := os.ReadDir(filepath.Join(m.root(), "sys/kernel/mm/hugepages"))
	if err != nil {
		return
	}
	for _, d := range dirs {
		kb, ok := strings.CutSuffix(strings.TrimPrefix(d.Name(), "hugepages-"), "kB")
		size, err := strconv.ParseInt(kb, 10, 64)
		if !ok || err != nil || size <= 0 {
			continue
		}
		s, err := m.read(filepath.Join("sys/kernel/mm/hugepages", d.Name(), "nr_hugepages"))
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			continue
		}
		name := v1.ResourceName(v1.ResourceHugePagesPrefix + resource.NewQuantity(size*1024, resource.BinarySI).String())
		out[name] = *resource.NewQuantity(n*size*1024, resource.BinarySI)
	}
}

func (m LocalMachine) memTotal() (int64, error) {
	b, ok, err := m.meminfo("MemTotal")
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("no MemTotal in /proc/meminfo")
	}
	return b, nil
}

// meminfo reads a field of /proc/meminfo, in bytes; ok is false when the
// file has none.
func (m LocalMachine) meminfo(field string) (bytes int64, ok bool, err error) {
	s, err := m.read("proc/meminfo")
	if err != nil {
		return 0, false, err
	}
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == field+":" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, false, fmt.Errorf("%s %q: %w", field, f[1], err)
			}
			return kb * 1024, true, nil
		}
	}
	return 0, false, nil
}

// SystemInfo implements Machine. Missing files leave their fields empty.
// A machine with swap (SwapTotal in /proc/meminfo) reports it as
// swap.capacity, as upstream's kubelet does (NodeSwap, GA and on).
func (m LocalMachine) SystemInfo(context.Context) (v1.NodeSystemInfo, error) {
	info := v1.NodeSystemInfo{OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH}
	if swap, ok, err := m.meminfo("SwapTotal"); err == nil && ok && swap > 0 {
		info.Swap = &v1.NodeSwapStatus{Capacity: &swap}
	}
	info.MachineID, _ = m.read("etc/machine-id")
	info.SystemUUID, _ = m.read("sys/class/dmi/id/product_uuid")
	info.BootID, _ = m.read("proc/sys/kernel/random/boot_id")
	info.KernelVersion, _ = m.read("proc/sys/kernel/osrelease")
	if osr, err := m.read("etc/os-release"); err == nil {
		for _, line := range strings.Split(osr, "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				info.OSImage = strings.Trim(v, `"'`)
			}
		}
	}
	return info, nil
}

// WithMaxPods returns m with its pods capacity set to pods (upstream's
// maxPods), whatever m reports; pods <= 0 returns m as it is.
func WithMaxPods(m Machine, pods int64) Machine {
	if pods <= 0 {
		return m
	}
	return maxPodsMachine{Machine: m, pods: pods}
}

type maxPodsMachine struct {
	Machine
	pods int64
}

// Capacity implements Machine: m's, with pods replaced.
func (m maxPodsMachine) Capacity(ctx context.Context) (v1.ResourceList, error) {
	c, err := m.Machine.Capacity(ctx)
	if err != nil {
		return nil, err
	}
	c = c.DeepCopy()
	c[v1.ResourcePods] = *resource.NewQuantity(m.pods, resource.DecimalSI)
	return c, nil
}
