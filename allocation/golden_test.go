package allocation_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/allocation"
	"github.com/kubeletkit/kubeletkit/internal/golden"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// TestGolden replays the transcripts in testdata/ (see package
// internal/golden for the format) against a Manager driven as the agent
// drives it, on a fake clock, with a checkpoint in a temporary directory.
// Commands:
//
//	node cpu=Q memory=Q pods=N | node error      the node's allocatable (default cpu=4 memory=8Gi pods=110)
//	pod <name> [cpu=Q memory=Q] [pod-cpu=Q pod-memory=Q] [prio=N] [static] [sidecar] [init] [burstable]
//	                                             a pod on the node (container app, without resources
//	                                             when cpu is not given; pod-level resources with
//	                                             pod-cpu; a sidecar proxy with cpu=100m memory=64Mi;
//	                                             a regular init container setup with cpu=100m
//	                                             memory=64Mi), not admitted yet
//	admit <name>                                 the agent's admission: the pod as allocated is
//	                                             allocated, a resize asked meanwhile weighed, Flush
//	resize <name> [cpu=Q] [memory=Q] [pod-cpu=Q] [pod-memory=Q] [proxy-cpu=Q] [setup-cpu=Q]
//	                                             the API asks new resources (generation+1):
//	                                             HandleResize, then Flush
//	spec <name> [cpu=Q] [memory=Q] [pod-cpu=Q] [pod-memory=Q] [proxy-cpu=Q] [setup-cpu=Q]
//	                                             the same change unheard of (the node is down)
//	weigh <name>                                 Manager.AdmitResize, which changes nothing
//	view <name>                                  the pod as allocated (AllocatedPod)
//	runtime <name> stale|actuated|pod-stale|unknown
//	                                             CheckResizeInProgress with the runtime running the
//	                                             containers with their old resources, the allocated
//	                                             ones, the allocated ones but the pod's cgroup with
//	                                             its old pod-level resources, or nothing known
//	fail <name> <message...>                     ResizeFailed
//	stop <name>                                  the pod is being stopped: no retry finds it
//	remove <name>                                the pod leaves the node: RemovePod, then
//	                                             RetryPendingResizes, as the agent does
//	gone <name>                                  the pod left unheard of (the node is down)
//	retry                                        RetryPendingResizes
//	orphans                                      RemoveOrphanedPods keeping the pods on the node
//	step <duration>
//	restart                                      a new Manager on the same checkpoint, Load
//	checkpoint                                   the checkpoint file
//
// After each command the harness prints the events recorded ("event ...")
// and every change of a pod's resize conditions since the previous
// command ("<pod>: <type>[=<reason>] gen=N since=t=D: message", or
// "<pod>: <type> gone"); "sync: ..." lists the pods whose status the
// Manager said is due.
func TestGolden(t *testing.T) {
	golden.Run(t, func(t *testing.T) func(golden.Case) []string {
		h := newHarness(t)
		return func(c golden.Case) []string {
			if len(c.Input) > 0 {
				t.Fatalf("%s:%d: %s takes no input lines", c.File, c.Line, c.Command)
			}
			return h.exec(c.Command)
		}
	})
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// recorder keeps the events a Manager records, as lines.
type recorder struct{ events []string }

func (r *recorder) Eventf(object runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	name := "?"
	if p, ok := object.(*v1.Pod); ok {
		name = p.Name
	}
	r.events = append(r.events, fmt.Sprintf("event %s %s %s: %s", eventtype, reason, name, fmt.Sprintf(messageFmt, args...)))
}

// harness is the node one transcript builds up.
type harness struct {
	t       *testing.T
	clk     *clocktesting.FakeClock
	path    string
	rec     *recorder
	m       *allocation.Manager
	alloc   v1.ResourceList
	nodeErr error
	pods    []*v1.Pod // the node's pods, in the order they came
	stopped map[string]bool
	runtime map[string]allocation.Actuation
	conds   map[string]string // each condition last printed, by "pod type"
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, clk: clocktesting.NewFakeClock(epoch), path: filepath.Join(t.TempDir(), allocation.CheckpointFile),
		rec: &recorder{}, alloc: resources("cpu", "4", "memory", "8Gi", "pods", "110"),
		stopped: map[string]bool{}, runtime: map[string]allocation.Actuation{}, conds: map[string]string{}}
	h.start()
	return h
}

// start builds the Manager and reads its checkpoint, as the agent's New.
func (h *harness) start() {
	m, err := allocation.New(allocation.Options{
		CheckpointPath: h.path,
		Node: allocation.NodeAllocatableFunc(func() (v1.ResourceList, error) {
			return h.alloc, h.nodeErr
		}),
		Pods:     allocation.PodsFuncs{Others: h.others, ByUID: h.byUID},
		Clock:    h.clk,
		Recorder: h.rec,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := m.Load(); err != nil {
		h.t.Fatal(err)
	}
	h.m = m
}

func (h *harness) others(pod *v1.Pod) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range h.pods {
		if p.UID != pod.UID {
			out = append(out, p)
		}
	}
	return out
}

func (h *harness) byUID(uid types.UID) (*v1.Pod, bool) {
	for _, p := range h.pods {
		if p.UID == uid && !h.stopped[p.Name] {
			return p, true
		}
	}
	return nil, false
}

func (h *harness) pod(name string) *v1.Pod {
	i := slices.IndexFunc(h.pods, func(p *v1.Pod) bool { return p.Name == name })
	if i < 0 {
		h.t.Fatalf("no pod %s", name)
	}
	return h.pods[i]
}

// replace puts p in place of the pod of its name: the API's new object.
func (h *harness) replace(p *v1.Pod) {
	h.pods[slices.IndexFunc(h.pods, func(q *v1.Pod) bool { return q.Name == p.Name })] = p
}

func (h *harness) exec(line string) []string {
	f := strings.Fields(line)
	cmd, args := f[0], f[1:]
	var out []string
	events := len(h.rec.events)
	switch cmd {
	case "node":
		h.node(args)
	case "pod":
		h.pods = append(h.pods, newPod(h.t, args[0], kv(args[1:])))
	case "admit":
		pod := h.pod(args[0])
		allocated, _ := h.m.AllocatedPod(pod)
		h.m.SetAllocated(allocated)
		if h.m.HandleResize(pod) {
			out = append(out, "sync: "+pod.Name)
		}
		h.m.Flush()
	case "resize", "spec":
		pod := h.pod(args[0]).DeepCopy()
		resize(h.t, pod, kv(args[1:]))
		h.replace(pod)
		if cmd == "spec" {
			break
		}
		if h.m.HandleResize(pod) {
			out = append(out, "sync: "+pod.Name)
		}
		h.m.Flush()
	case "weigh":
		out = append(out, h.m.AdmitResize(h.pod(args[0])).String())
	case "view":
		p, asked := h.m.AllocatedPod(h.pod(args[0]))
		s := p.Name + " as allocated: " + containers(p)
		if asked {
			s += " (resize asked: " + containers(h.pod(args[0])) + ")"
		}
		out = append(out, s)
	case "runtime":
		pod, _ := h.m.AllocatedPod(h.pod(args[0]))
		h.m.CheckResizeInProgress(pod, h.actuation(args[1]))
	case "fail":
		pod, _ := h.m.AllocatedPod(h.pod(args[0]))
		if h.m.ResizeFailed(pod, strings.Join(args[1:], " ")) {
			out = append(out, "sync: "+pod.Name)
		}
	case "stop":
		h.stopped[args[0]] = true
	case "remove":
		pod := h.pod(args[0])
		h.pods = slices.DeleteFunc(h.pods, func(p *v1.Pod) bool { return p == pod })
		h.m.RemovePod(pod.UID)
		out = append(out, h.retry()...)
	case "gone":
		h.pods = slices.DeleteFunc(h.pods, func(p *v1.Pod) bool { return p.Name == args[0] })
	case "retry":
		out = append(out, h.retry()...)
	case "orphans":
		h.m.RemoveOrphanedPods(func(uid types.UID) bool {
			return slices.ContainsFunc(h.pods, func(p *v1.Pod) bool { return p.UID == uid })
		})
	case "step":
		d, err := time.ParseDuration(args[0])
		if err != nil {
			h.t.Fatal(err)
		}
		h.clk.Step(d)
	case "restart":
		h.start()
	case "checkpoint":
		b, err := os.ReadFile(h.path)
		switch {
		case os.IsNotExist(err):
			out = append(out, "none")
		case err != nil:
			h.t.Fatal(err)
		default:
			out = append(out, string(b))
		}
	default:
		h.t.Fatalf("unknown command %q", line)
	}
	out = append(out, h.rec.events[events:]...)
	return append(out, h.conditionChanges()...)
}

func (h *harness) node(args []string) {
	if slices.Contains(args, "error") {
		h.nodeErr = fmt.Errorf("node not known")
		return
	}
	h.nodeErr = nil
	for k, v := range kv(args) {
		h.alloc[v1.ResourceName(k)] = resource.MustParse(v)
	}
}

func (h *harness) retry() []string {
	var names []string
	for _, p := range h.m.RetryPendingResizes() {
		names = append(names, p.Name)
	}
	if len(names) == 0 {
		return nil
	}
	return []string{"sync: " + strings.Join(names, " ")}
}

// actuation is a runtime that runs every container with its old resources
// (stale), with those allocated (actuated), or is not known.
func (h *harness) actuation(state string) allocation.Actuation {
	switch state {
	case "stale":
		return allocation.ActuationFunc(func(*v1.Container) bool { return false })
	case "actuated":
		return allocation.ActuationFuncs{}
	case "pod-stale":
		return allocation.ActuationFuncs{Pod: func(*v1.Pod) bool { return false }}
	case "unknown":
		return nil
	}
	h.t.Fatalf("runtime state %q", state)
	return nil
}

// conditionChanges prints the resize conditions that changed since the
// previous command, pod by pod in the order they came.
func (h *harness) conditionChanges() []string {
	var out []string
	now := map[string]string{}
	var names []string
	for _, p := range h.pods {
		names = append(names, p.Name)
		for _, c := range h.m.Conditions(p.UID) {
			s := string(c.Type)
			if c.Reason != "" {
				s += "=" + c.Reason
			}
			s += fmt.Sprintf(" gen=%d since=t=%s", c.ObservedGeneration, c.LastTransitionTime.Sub(epoch))
			if c.Message != "" {
				s += ": " + c.Message
			}
			now[p.Name+" "+string(c.Type)] = s
		}
	}
	for _, name := range names {
		for _, t := range []v1.PodConditionType{v1.PodResizePending, v1.PodResizeInProgress} {
			key := name + " " + string(t)
			was, had := h.conds[key]
			is, has := now[key]
			switch {
			case has && (!had || was != is):
				out = append(out, name+": "+is)
			case had && !has:
				out = append(out, name+": "+string(t)+" gone")
			}
		}
	}
	h.conds = now
	return out
}

func kv(args []string) map[string]string {
	out := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		out[k] = v
	}
	return out
}

func resources(kv ...string) v1.ResourceList {
	l := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func uidOf(name string) types.UID { return types.UID("uid-" + name) }

// requirements are requests of cpu and memory, and the same limits unless
// burstable.
func requirements(cpu, memory string, burstable bool) v1.ResourceRequirements {
	r := v1.ResourceRequirements{Requests: resources("cpu", cpu, "memory", memory)}
	if !burstable {
		r.Limits = r.Requests.DeepCopy()
	}
	return r
}

// newPod builds a transcript's "pod <name> <options>".
func newPod(t *testing.T, name string, opts map[string]string) *v1.Pod {
	_, burstable := opts["burstable"]
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uidOf(name), Generation: 1},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
	}
	if _, ok := opts["cpu"]; ok {
		p.Spec.Containers[0].Resources = requirements(opts["cpu"], opts["memory"], burstable)
	}
	if _, ok := opts["pod-cpu"]; ok {
		r := requirements(opts["pod-cpu"], opts["pod-memory"], burstable)
		p.Spec.Resources = &r
	}
	if v, ok := opts["prio"]; ok {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			t.Fatal(err)
		}
		prio := int32(n)
		p.Spec.Priority = &prio
	}
	if _, ok := opts["static"]; ok {
		p.Annotations = map[string]string{podspec.ConfigSourceAnnotation: "file"}
	}
	if _, ok := opts["sidecar"]; ok {
		always := v1.ContainerRestartPolicyAlways
		p.Spec.InitContainers = []v1.Container{{Name: "proxy", Image: "envoy", RestartPolicy: &always,
			Resources: requirements("100m", "64Mi", burstable)}}
	}
	if _, ok := opts["init"]; ok {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: "setup", Image: "busybox",
			Resources: requirements("100m", "64Mi", burstable)})
	}
	return p
}

// initContainer is the pod's init container of that name.
func initContainer(t *testing.T, pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	t.Fatalf("pod %s has no init container %s", pod.Name, name)
	return nil
}

// resize changes pod's spec as the API's resize subresource would: the
// app container's cpu and memory, the sidecar's and the regular init
// container's cpu, the generation.
func resize(t *testing.T, pod *v1.Pod, opts map[string]string) {
	set := func(c *v1.Container, name v1.ResourceName, v string) {
		q := resource.MustParse(v)
		c.Resources.Requests[name] = q
		if c.Resources.Limits != nil {
			c.Resources.Limits[name] = q
		}
	}
	for k, v := range opts {
		switch k {
		case "cpu":
			set(&pod.Spec.Containers[0], v1.ResourceCPU, v)
		case "memory":
			set(&pod.Spec.Containers[0], v1.ResourceMemory, v)
		case "proxy-cpu":
			set(initContainer(t, pod, "proxy"), v1.ResourceCPU, v)
		case "setup-cpu":
			set(initContainer(t, pod, "setup"), v1.ResourceCPU, v)
		case "pod-cpu", "pod-memory":
			if pod.Spec.Resources == nil {
				t.Fatalf("resize %s: %s: no pod-level resources", pod.Name, k)
			}
			c := &v1.Container{Resources: *pod.Spec.Resources}
			set(c, v1.ResourceName(strings.TrimPrefix(k, "pod-")), v)
			pod.Spec.Resources = &c.Resources
		default:
			t.Fatalf("resize %s: %s", pod.Name, k)
		}
	}
	pod.Generation++
}

// containers prints the requests of the pod's resizable containers, after
// the pod-level ones if it has them.
func containers(p *v1.Pod) string {
	var s []string
	if r := p.Spec.Resources; r != nil {
		s = append(s, fmt.Sprintf("pod cpu=%s memory=%s", r.Requests.Cpu(), r.Requests.Memory()))
	}
	for _, c := range append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...) {
		s = append(s, fmt.Sprintf("%s cpu=%s memory=%s", c.Name, c.Resources.Requests.Cpu(), c.Resources.Requests.Memory()))
	}
	return strings.Join(s, ", ")
}
