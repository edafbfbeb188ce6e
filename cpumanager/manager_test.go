package cpumanager_test

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/kubeletkit/kubeletkit/cpumanager"
	"github.com/kubeletkit/kubeletkit/internal/golden"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// container parses "NAME cpu=Q [mem=Q] [burstable] [sidecar]" into a
// container whose limits equal its requests unless burstable.
func container(f []string) (v1.Container, bool, bool) {
	c := v1.Container{Name: f[0], Resources: v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}}
	burstable, sidecar := false, false
	mem := resource.MustParse("100Mi")
	for _, kv := range f[1:] {
		switch {
		case strings.HasPrefix(kv, "cpu="):
			c.Resources.Requests[v1.ResourceCPU] = resource.MustParse(strings.TrimPrefix(kv, "cpu="))
		case strings.HasPrefix(kv, "mem="):
			mem = resource.MustParse(strings.TrimPrefix(kv, "mem="))
		case kv == "burstable":
			burstable = true
		case kv == "sidecar":
			sidecar = true
		}
	}
	c.Resources.Requests[v1.ResourceMemory] = mem
	c.Resources.Limits = c.Resources.Requests.DeepCopy()
	if burstable {
		c.Resources.Limits[v1.ResourceCPU] = resource.MustParse("64")
	}
	if sidecar {
		always := v1.ContainerRestartPolicyAlways
		c.RestartPolicy = &always
	}
	return c, burstable, sidecar
}

// pod builds a pod from input lines "init NAME ..." and "app NAME ...".
func pod(name string, lines []string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)}}
	for _, l := range lines {
		f := strings.Fields(l)
		c, _, _ := container(f[1:])
		if f[0] == "init" {
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		} else {
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
	}
	return p
}

// harness drives one Manager through a transcript:
//
//	new static 1x4x2x1 [reserved=LIST|reservedmilli=N] [OPTION=VALUE...]
//	admit POD   (input: its containers)
//	remove POD
//	reconcile ACTIVE,PODS   (input: running "POD CONTAINER ID" lines)
//	restart     (a new Manager on the same checkpoint)
//	state
func harness(t *testing.T) func(golden.Case) []string {
	dir := t.TempDir()
	var m *cpumanager.Manager
	var opts cpumanager.Options
	pods := map[string]*v1.Pod{}
	state := func() []string {
		out := []string{"default " + m.DefaultCPUs().String()}
		a := m.Assignments()
		var lines []string
		for uid, cs := range a {
			for name, s := range cs {
				lines = append(lines, fmt.Sprintf("%s/%s %s", uid, name, s))
			}
		}
		slices.Sort(lines)
		return append(out, lines...)
	}
	return func(c golden.Case) []string {
		f := c.Fields()
		switch f[0] {
		case "new":
			var dims [4]int
			for i, s := range strings.Split(f[2], "x") {
				dims[i], _ = strconv.Atoi(s)
			}
			tp, err := cpumanager.NewTopology(dims[0], dims[1], dims[2], dims[3])
			if err != nil {
				return []string{"error: " + err.Error()}
			}
			os.RemoveAll(filepath.Join(dir, cpumanager.StateFileName))
			opts = cpumanager.Options{Policy: f[1], Topology: tp, StateDir: dir, Logger: quiet, ReservedMilliCPU: 1000}
			for _, kv := range f[3:] {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "reserved":
					opts.Reserved, _ = cpuset.Parse(v)
				case "reservedmilli":
					opts.ReservedMilliCPU, _ = strconv.ParseInt(v, 10, 64)
				default:
					if opts.PolicyOptions == nil {
						opts.PolicyOptions = map[string]string{}
					}
					opts.PolicyOptions[k] = v
				}
			}
			m, err = cpumanager.New(opts)
			if err != nil {
				return []string{"error: " + err.Error()}
			}
			return append([]string{"reserved " + m.Reserved().String()}, state()...)
		case "admit":
			p := pod(f[1], c.Input)
			ok, reason, msg := m.Admit(p, nil)
			if !ok {
				return append([]string{fmt.Sprintf("refused %s: %s", reason, msg)}, state()...)
			}
			pods[f[1]] = p
			return state()
		case "remove":
			m.RemovePod(types.UID(f[1]))
			return state()
		case "reconcile":
			var active []*v1.Pod
			if len(f) > 1 {
				for _, name := range strings.Split(f[1], ",") {
					active = append(active, pods[name])
				}
			}
			var running []cpumanager.RunningContainer
			for _, l := range c.Input {
				r := strings.Fields(l)
				running = append(running, cpumanager.RunningContainer{PodUID: types.UID(r[0]), Name: r[1], ID: r[2]})
			}
			var out []string
			for _, u := range m.Reconcile(active, running) {
				out = append(out, fmt.Sprintf("update %s %s", u.ID, u.CPUs))
			}
			if len(out) == 0 {
				out = []string{"no updates"}
			}
			return append(out, state()...)
		case "restart":
			var err error
			if len(f) > 1 {
				opts.Policy = f[1]
			}
			m2, err := cpumanager.New(opts)
			if err != nil {
				return []string{"error: " + strings.ReplaceAll(err.Error(), dir, "DIR")}
			}
			m = m2
			return state()
		case "damage":
			p := filepath.Join(dir, cpumanager.StateFileName)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, []byte(strings.Replace(string(b), c.Input[0], c.Input[1], 1)), 0o600)
			return []string{"ok"}
		case "state":
			return state()
		}
		return []string{"unknown command " + f[0]}
	}
}

func TestTranscripts(t *testing.T) { golden.Run(t, harness) }

func TestNewRefuses(t *testing.T) {
	tp := topo(t, 1, 4, 2, 1)
	for _, tc := range []struct {
		name string
		opts cpumanager.Options
		err  string
	}{
		{"unknown policy", cpumanager.Options{Policy: "dynamic"}, `cpumanager: invalid options: unknown policy: "dynamic"`},
		{"static without topology", cpumanager.Options{Policy: "static", ReservedMilliCPU: 1000}, "cpumanager: invalid options: the static policy needs the machine's Topology"},
		{"static without reserved CPUs", cpumanager.Options{Policy: "static", Topology: tp},
			"cpumanager: invalid options: the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero"},
		{"unknown option", cpumanager.Options{Policy: "static", Topology: tp, ReservedMilliCPU: 500, PolicyOptions: map[string]string{"align-by-socket": "true"}},
			`cpumanager: invalid options: unknown CPU Manager Policy option: "align-by-socket"`},
		{"options without static", cpumanager.Options{PolicyOptions: map[string]string{"full-pcpus-only": "true"}},
			"cpumanager: invalid options: cpuManagerPolicyOptions [full-pcpus-only] need the static policy"},
		{"reserved off the machine", cpumanager.Options{Policy: "static", Topology: tp, Reserved: cpuset.New(9)},
			"cpumanager: invalid options: reserved CPUs 9 are not all on this machine (0-7)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Logger = quiet
			_, err := cpumanager.New(tc.opts)
			require.EqualError(t, err, tc.err)
			assert.ErrorIs(t, err, cpumanager.ErrInvalidOptions)
		})
	}
}

func TestPolicyNone(t *testing.T) {
	m, err := cpumanager.New(cpumanager.Options{Logger: quiet, StateDir: t.TempDir()})
	require.NoError(t, err)
	p := pod("p", []string{"app c cpu=2"})
	ok, _, _ := m.Admit(p, nil)
	assert.True(t, ok)
	assert.True(t, m.ContainerCPUs(p.UID, "c").IsEmpty())
	assert.Empty(t, m.AllocatableCPUs())
	assert.Nil(t, m.Reconcile([]*v1.Pod{p}, []cpumanager.RunningContainer{{PodUID: p.UID, Name: "c", ID: "x"}}))
}

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	write := func(p, s string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(root, p), []byte(s+"\n"), 0o644))
	}
	write("devices/system/cpu/online", "0-3")
	// Two sockets, each numbering its cores from 0; SMT siblings 0/2 and 1/3.
	for cpu := range 4 {
		write(fmt.Sprintf("devices/system/cpu/cpu%d/topology/core_id", cpu), "0")
		write(fmt.Sprintf("devices/system/cpu/cpu%d/topology/physical_package_id", cpu), strconv.Itoa(cpu%2))
	}
	write("devices/system/node/node0/cpulist", "0,2")
	write("devices/system/node/node1/cpulist", "1,3")
	tp, err := cpumanager.Discover(root)
	require.NoError(t, err)
	assert.Equal(t, []cpumanager.CPU{{ID: 0, Core: 0, Socket: 0, NUMANode: 0}, {ID: 1, Core: 1, Socket: 1, NUMANode: 1},
		{ID: 2, Core: 0, Socket: 0, NUMANode: 0}, {ID: 3, Core: 1, Socket: 1, NUMANode: 1}}, tp.CPUs())
	assert.Equal(t, 2, tp.CPUsPerCore())
	_, err = cpumanager.Discover(t.TempDir())
	assert.Error(t, err)
}

func TestDiscoverHost(t *testing.T) {
	tp, err := cpumanager.Discover("/sys")
	require.NoError(t, err)
	assert.Positive(t, tp.NumCPUs())
}

type metricsLog []string

func (l *metricsLog) Pinning(failed, full bool) {
	*l = append(*l, fmt.Sprintf("pinning failed=%v full=%v", failed, full))
}

func (l *metricsLog) Pool(shared int64, exclusive int, byNUMA map[int]int) {
	*l = append(*l, fmt.Sprintf("pool shared=%d exclusive=%d numa=%v", shared, exclusive, byNUMA))
}

// The figures of upstream's cpu_manager_* series: a pinning request for each
// container that asks for exclusive CPUs (a failure counted as such), and
// the pool after each change.
func TestMetrics(t *testing.T) {
	var got metricsLog
	tp := topo(t, 2, 2, 1, 1) // 4 CPUs, one NUMA node a socket
	m, err := cpumanager.New(cpumanager.Options{Policy: cpumanager.PolicyStatic, Topology: tp, ReservedMilliCPU: 1000, Metrics: &got, Logger: quiet})
	require.NoError(t, err)
	ok, _, _ := m.Admit(pod("p1", []string{"app a cpu=2", "app b cpu=500m"}), nil)
	require.True(t, ok)
	ok, _, _ = m.Admit(pod("p2", []string{"app a cpu=2"}), nil)
	require.False(t, ok)
	m.RemovePod("p1")
	assert.Equal(t, metricsLog{
		"pool shared=3000 exclusive=0 numa=map[0:0 1:0]",
		"pool shared=1000 exclusive=2 numa=map[0:0 1:2]",
		"pinning failed=false full=false",
		"pinning failed=true full=false",
		"pool shared=3000 exclusive=0 numa=map[0:0 1:0]",
	}, got)
}

// A Guaranteed pod with pod-level resources gets no exclusive CPUs, as
// upstream without its alpha PodLevelResourceManagers.
func TestGuaranteedCPUsPodLevel(t *testing.T) {
	p := pod("p", []string{"app c cpu=2"})
	assert.Equal(t, 2, cpumanager.GuaranteedCPUs(p, &p.Spec.Containers[0]))
	r := p.Spec.Containers[0].Resources.DeepCopy()
	p.Spec.Resources = r
	assert.Equal(t, 0, cpumanager.GuaranteedCPUs(p, &p.Spec.Containers[0]))
}
