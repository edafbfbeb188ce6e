package main

import (
	"bytes"
	"cmp"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// ContainerView is what a recording keeps of a container status.
type ContainerView struct {
	Name         string `json:"name"`
	State        string `json:"state"`
	Message      string `json:"message,omitempty"`
	Last         string `json:"last,omitempty"`
	Ready        bool   `json:"ready"`
	Started      string `json:"started"`
	RestartCount int32  `json:"restartCount"`
	Image        string `json:"image"`
	// Resources and Allocated are the status's resources and
	// allocatedResources (in-place resize), as resourceText writes them.
	Resources string `json:"resources,omitempty"`
	Allocated string `json:"allocatedResources,omitempty"`
}

// PodView is what a recording keeps of a pod's status.
type PodView struct {
	Phase        string          `json:"phase"`
	Reason       string          `json:"reason,omitempty"`
	Message      string          `json:"message,omitempty"`
	Conditions   []string        `json:"conditions"`
	Init         []ContainerView `json:"init,omitempty"`
	Containers   []ContainerView `json:"containers"`
	QOS          string          `json:"qosClass"`
	HasPodIP     bool            `json:"hasPodIP"`
	HasHostIP    bool            `json:"hasHostIP"`
	HasStartTime bool            `json:"hasStartTime"`
	// Deleting says the pod has a deletion timestamp (it is terminating).
	Deleting bool `json:"deleting,omitempty"`
}

// Sample is the pods seen at one moment, by name.
type Sample struct {
	Elapsed time.Duration       `json:"elapsed"`
	Pods    map[string]*PodView `json:"pods"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: fidelity record|compare|create|clean ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "record":
		err = record(os.Args[2:])
	case "create":
		err = create(os.Args[2:])
	case "clean":
		err = clean(os.Args[2:])
	case "compare":
		var same bool
		same, err = compare(os.Args[2:], os.Stdout)
		if err == nil && !same {
			os.Exit(1)
		}
	default:
		err = fmt.Errorf("unknown command %q (record, compare, create or clean)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fidelity:", err)
		os.Exit(2)
	}
}

func record(args []string) error {
	fs := flag.NewFlagSet("record", flag.ContinueOnError)
	url := fs.String("url", "http://127.0.0.1:10255/pods", "the kubelet's /pods endpoint (with --server: the node's pods on the API server)")
	duration := fs.Duration("duration", time.Minute, "how long to record, from the first answer")
	interval := fs.Duration("interval", 500*time.Millisecond, "time between samples")
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for the first answer")
	out := fs.String("out", "", "the recording (JSON); required")
	deleteFrom := fs.String("delete-from", "", "a manifest directory: each pod annotated "+deleteAfterAnnotation+
		" is deleted that long after the first answer (through the API server with --server, else by removing its manifest file)")
	var a apiFlags
	a.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return errors.New("record: --out is required")
	}
	client, err := a.client()
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	if a.server != "" {
		*url = a.podsURL()
	}
	var deletions []deletion
	if *deleteFrom != "" {
		if deletions, err = readDeletions(*deleteFrom); err != nil {
			return fmt.Errorf("record: %w", err)
		}
	}
	deadline := time.Now().Add(*wait)
	var t0 time.Time
	var samples []Sample
	for {
		pods, err := get(client, a.token, *url)
		now := time.Now()
		if err != nil {
			if t0.IsZero() && now.Before(deadline) {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			if t0.IsZero() {
				return fmt.Errorf("record: %s did not answer within %s: %w", *url, *wait, err)
			}
			return fmt.Errorf("record: %w", err)
		}
		if t0.IsZero() {
			t0 = now
		}
		samples = append(samples, Sample{Elapsed: now.Sub(t0), Pods: pods})
		for i := range deletions {
			d := &deletions[i]
			if d.done || now.Sub(t0) < d.after {
				continue
			}
			d.done = true
			if err := d.run(client, a); err != nil {
				if d.resize == nil {
					return fmt.Errorf("record: delete %s: %w", d.name, err)
				}
				// A node the API server will not resize pods on
				// (virtual-kubelet's mock provider: "Pod running on
				// node without support for resize") is recorded
				// as it is; the comparison shows the difference.
				fmt.Fprintf(os.Stderr, "fidelity: record: resize %s refused: %v\n", d.name, err)
			}
		}
		if now.Sub(t0) >= *duration {
			break
		}
		time.Sleep(*interval)
	}
	data, err := jsonIndent(samples)
	if err != nil {
		return err
	}
	return os.WriteFile(*out, data, 0o644)
}

// deleteAfterAnnotation on a manifest's pod asks record to delete it that
// long (a Go duration) after the first answer.
const deleteAfterAnnotation = "fidelity.kubeletkit.io/delete-after"

// createAfterAnnotation delays a pod's creation through the API server by
// a duration after the first pods' (create): for pods whose admission
// depends on the pods admitted before them (the memory they use, a host
// port they hold), since both kubelets admit in creation order and the API
// server's creation times have a resolution of one second.
const createAfterAnnotation = "fidelity.kubeletkit.io/create-after"

// resizeAfterAnnotation on a manifest's pod asks record to resize it in
// place that long (a Go duration) after the first answer, through the API
// server's resize subresource, with the strategic merge patch of
// resizeAnnotation. A static pod cannot be resized (its manifest is its
// spec): without --server the annotation is ignored.
const (
	resizeAfterAnnotation = "fidelity.kubeletkit.io/resize-after"
	resizeAnnotation      = "fidelity.kubeletkit.io/resize"
)

// deletion is a pod record deletes, or resizes (resize set), on schedule.
type deletion struct {
	path, namespace, name string
	after                 time.Duration
	resize                json.RawMessage
	done                  bool
}

// readDeletions reads the deletions and resizes the manifests of dir ask
// for.
func readDeletions(dir string) ([]deletion, error) {
	var out []deletion
	err := eachManifest(dir, func(f string, data []byte) error {
		var pod v1.Pod
		if err := yaml.Unmarshal(data, &pod); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		ns := cmp.Or(pod.Namespace, metav1.NamespaceDefault)
		if v, ok := pod.Annotations[deleteAfterAnnotation]; ok {
			after, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", f, deleteAfterAnnotation, err)
			}
			out = append(out, deletion{path: f, namespace: ns, name: pod.Name, after: after})
		}
		if v, ok := pod.Annotations[resizeAfterAnnotation]; ok {
			after, err := time.ParseDuration(v)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", f, resizeAfterAnnotation, err)
			}
			patch := json.RawMessage(pod.Annotations[resizeAnnotation])
			if !json.Valid(patch) {
				return fmt.Errorf("%s: %s: not a JSON patch", f, resizeAnnotation)
			}
			out = append(out, deletion{path: f, namespace: ns, name: pod.Name, after: after, resize: patch})
		}
		return nil
	})
	return out, err
}

// run deletes the pod: through the API server (its default grace period),
// or, for a static pod, by removing its manifest; or resizes it through
// the API server.
func (d *deletion) run(client *http.Client, a apiFlags) error {
	url := fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s", a.server, d.namespace, d.name)
	switch {
	case d.resize != nil && a.server == "":
		return nil
	case d.resize != nil:
		return call(client, a.token, http.MethodPatch, url+"/resize", d.resize, nil, http.StatusOK)
	case a.server == "":
		return os.Remove(d.path)
	}
	return call(client, a.token, http.MethodDelete, url, nil, nil, http.StatusOK, http.StatusAccepted)
}

// get reads the pod list and turns it into views, by pod name.
func get(client *http.Client, token, url string) (map[string]*PodView, error) {
	var list v1.PodList
	if err := call(client, token, http.MethodGet, url, nil, &list, http.StatusOK); err != nil {
		return nil, err
	}
	out := map[string]*PodView{}
	for i := range list.Items {
		out[list.Items[i].Name] = view(&list.Items[i])
	}
	return out, nil
}

func view(p *v1.Pod) *PodView {
	st := p.Status
	v := &PodView{
		Phase: string(st.Phase), Reason: st.Reason, Message: st.Message, QOS: string(st.QOSClass),
		HasPodIP: st.PodIP != "", HasHostIP: st.HostIP != "", HasStartTime: st.StartTime != nil,
		Deleting:   p.DeletionTimestamp != nil,
		Conditions: []string{},
	}
	for _, c := range st.Conditions {
		v.Conditions = append(v.Conditions, fmt.Sprintf("%s=%s reason=%q message=%q", c.Type, c.Status, c.Reason, c.Message))
	}
	slices.Sort(v.Conditions)
	v.Init = containers(st.InitContainerStatuses)
	v.Containers = containers(st.ContainerStatuses)
	// A pod's UID is its identity, not its status (a static pod's is a
	// hash of how each agent decoded the manifest): messages name it as
	// <uid>.
	if p.UID != "" {
		for _, cs := range [][]ContainerView{v.Init, v.Containers} {
			for i := range cs {
				cs[i].Message = strings.ReplaceAll(cs[i].Message, string(p.UID), "<uid>")
			}
		}
		v.Message = strings.ReplaceAll(v.Message, string(p.UID), "<uid>")
	}
	return v
}

func containers(sts []v1.ContainerStatus) []ContainerView {
	var out []ContainerView
	for _, s := range sts {
		c := ContainerView{Name: s.Name, Ready: s.Ready, RestartCount: s.RestartCount, Image: s.Image, Started: "nil"}
		if s.Started != nil {
			c.Started = fmt.Sprint(*s.Started)
		}
		c.State, c.Message = state(s.State)
		c.Last, _ = state(s.LastTerminationState)
		if s.Resources != nil {
			c.Resources = "requests:" + listText(s.Resources.Requests) + " limits:" + listText(s.Resources.Limits)
		}
		c.Allocated = listText(s.AllocatedResources)
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b ContainerView) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// listText writes a resource list as "cpu=100m,memory=64Mi", sorted by
// name, each quantity as the API serializes it.
func listText(l v1.ResourceList) string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(l)) {
		q := l[name]
		parts = append(parts, string(name)+"="+q.String())
	}
	return strings.Join(parts, ",")
}

// state describes a container state without its timestamps and IDs.
func state(s v1.ContainerState) (string, string) {
	switch {
	case s.Waiting != nil:
		return "waiting:" + s.Waiting.Reason, s.Waiting.Message
	case s.Running != nil:
		return "running", ""
	case s.Terminated != nil:
		t := s.Terminated
		return fmt.Sprintf("terminated:%s:exit=%d:signal=%d", t.Reason, t.ExitCode, t.Signal), t.Message
	}
	return "", ""
}

func load(path string) ([]Sample, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s []Sample
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("%s: no samples", path)
	}
	return s, nil
}

// compare reports whether the last samples of the two recordings are the
// same, and prints what differs and the two timelines.
func compare(args []string, w io.Writer) (bool, error) {
	if len(args) != 2 {
		return false, errors.New("compare: want two recordings (upstream, then ours)")
	}
	a, err := load(args[0])
	if err != nil {
		return false, err
	}
	b, err := load(args[1])
	if err != nil {
		return false, err
	}
	la, lb := a[len(a)-1], b[len(b)-1]
	fmt.Fprintf(w, "last samples: %s at %s, %s at %s\n\n", args[0], la.Elapsed.Round(time.Millisecond), args[1], lb.Elapsed.Round(time.Millisecond))
	same := true
	for _, name := range podNames(la, lb) {
		pa, pb := la.Pods[name], lb.Pods[name]
		switch {
		case pa == nil:
			fmt.Fprintf(w, "%s: only in %s\n", name, args[1])
			same = false
			continue
		case pb == nil:
			fmt.Fprintf(w, "%s: only in %s\n", name, args[0])
			same = false
			continue
		}
		pb, notes := alignRetryCycles(pa, pb)
		diffs := append(notes, diff("", pa, pb)...)
		var real []string
		for _, d := range diffs {
			if !d.timing {
				real = append(real, d.text)
			}
		}
		switch {
		case len(diffs) == 0:
			fmt.Fprintf(w, "%s: same\n", name)
		case len(real) == 0:
			fmt.Fprintf(w, "%s: same but for timing\n", name)
		default:
			same = false
			fmt.Fprintf(w, "%s: %d differences\n", name, len(real))
		}
		for _, d := range diffs {
			if d.timing {
				fmt.Fprintf(w, "  (timing) %s\n", d.text)
			} else {
				fmt.Fprintf(w, "  %s\n", d.text)
			}
		}
	}
	fmt.Fprintf(w, "\ntimelines (seconds from the first answer; upstream | ours):\n")
	for _, name := range everPod(a, b) {
		ta, tb := timeline(a, name), timeline(b, name)
		for _, k := range unionKeys(ta, tb) {
			fmt.Fprintf(w, "  %s %-40s %8s | %s\n", name, k, secs(ta, k), secs(tb, k))
		}
	}
	return same, nil
}

func podNames(a, b Sample) []string { return unionKeys(a.Pods, b.Pods) }

// everPod returns the name of every pod of any sample of a or b, sorted.
func everPod(a, b []Sample) []string {
	names := map[string]bool{}
	for _, s := range slices.Concat(a, b) {
		for n := range s.Pods {
			names[n] = true
		}
	}
	return unionKeys(names, nil)
}

// unionKeys returns the keys of a and b, sorted.
func unionKeys[V any](a, b map[string]V) []string {
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// difference is one field that differs. A restart count off by one is
// timing: each kubelet jitters its retries (up to 50% of the back-off), so
// a sample can fall between the two agents' restarts.
type difference struct {
	text   string
	timing bool
}

// diff lists the fields of the two views that differ, as JSON paths.
func diff(prefix string, a, b any) []difference {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var ma, mb any
	_ = json.Unmarshal(ja, &ma)
	_ = json.Unmarshal(jb, &mb)
	var out []difference
	walk(prefix, ma, mb, &out)
	return out
}

func walk(path string, a, b any, out *[]difference) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		for _, k := range unionKeys(av, bv) {
			walk(path+"."+k, av[k], bv[k], out)
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			break
		}
		for i := range av {
			walk(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i], out)
		}
		return
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		fa, aok := a.(float64)
		fb, bok := b.(float64)
		timing := strings.HasSuffix(path, ".restartCount") && aok && bok && (fa-fb == 1 || fb-fa == 1)
		*out = append(*out, difference{fmt.Sprintf("%s: upstream %s, ours %s", strings.TrimPrefix(path, "."), ja, jb), timing})
	}
}

// timeline is when things first happened to a pod: each phase, Ready,
// and each container's restarts and states.
func timeline(samples []Sample, name string) map[string]time.Duration {
	out := map[string]time.Duration{}
	first := func(k string, at time.Duration) {
		if _, ok := out[k]; !ok {
			out[k] = at
		}
	}
	seen := false
	for _, s := range samples {
		p := s.Pods[name]
		if p == nil {
			if seen {
				first("gone", s.Elapsed)
			}
			continue
		}
		seen = true
		first("phase="+p.Phase, s.Elapsed)
		if p.Deleting {
			first("deleting", s.Elapsed)
		}
		for _, c := range p.Conditions {
			if strings.HasPrefix(c, "Ready=True") {
				first("Ready", s.Elapsed)
			}
		}
		for _, c := range slices.Concat(p.Init, p.Containers) {
			if c.RestartCount > 0 {
				first(fmt.Sprintf("%s restartCount=%d", c.Name, c.RestartCount), s.Elapsed)
			}
			kind, _, _ := strings.Cut(c.State, ":exit")
			first(fmt.Sprintf("%s %s", c.Name, kind), s.Elapsed)
		}
	}
	return out
}

func secs(t map[string]time.Duration, k string) string {
	d, ok := t[k]
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.1f", d.Seconds())
}

func jsonIndent(samples []Sample) ([]byte, error) { return json.MarshalIndent(samples, "", " ") }

// pullCycle are the states an image that cannot be pulled alternates
// between, each kubelet on its own jittered retries.
var pullCycle = map[string]bool{"waiting:ErrImagePull": true, "waiting:ImagePullBackOff": true}

// crashCycle are the states a crash-looping container spends its time in:
// running, then held in its back-off, each kubelet on its own jittered
// retries (a container a probe or a failed hook kills keeps its restart
// count while it backs off, so both sides can show the same count); a
// container whose postStart hook fails shows PostStartHookError between
// the two.
var crashCycle = map[string]bool{"running": true, "waiting:CrashLoopBackOff": true, "waiting:PostStartHookError": true}

// backoffDelay is the delay in a CrashLoopBackOff message ("back-off 20s
// restarting failed container=...").
var backoffDelay = regexp.MustCompile(`^back-off \S+ `)

func oneApart(a, b int32) bool { return a-b == 1 || b-a == 1 }

// exitedThenBackOff reports whether x shows an instance that has just
// exited and y the same container one sync later: held in its back-off
// with that exit as its last termination.
func exitedThenBackOff(x, y ContainerView) bool {
	return strings.HasPrefix(x.State, "terminated:") && y.State == "waiting:CrashLoopBackOff" && y.Last == x.State
}

// exitedWhileRunning reports whether x shows an instance that has just
// exited the way the previous one did, and y the same instance still
// running: y's kubelet has not seen the exit yet.
func exitedWhileRunning(x, y ContainerView) bool {
	return strings.HasPrefix(x.State, "terminated:") && y.State == "running" && y.Last == x.State
}

// justExited reports whether one of a and b shows an instance that has just
// exited and the other the same point of the crash loop a sync later:
// held in its back-off after that exit (same restart count), or one
// cycle behind, in the back-off after the exit before (the exited side's
// count one more); or still running that instance (same count), or
// already running the next one (its count one more).
func justExited(a, b ContainerView) bool {
	for _, p := range [][2]ContainerView{{a, b}, {b, a}} {
		x, y := p[0], p[1]
		switch {
		case exitedThenBackOff(x, y) && (x.RestartCount == y.RestartCount || x.RestartCount == y.RestartCount+1):
			return true
		case exitedWhileRunning(x, y) && (x.RestartCount == y.RestartCount || y.RestartCount == x.RestartCount+1):
			return true
		}
	}
	return false
}

// alignRetryCycles returns ours with each container that is at another
// point of its retry cycle than upstream's set to upstream's state (and
// what follows from it), and a timing note for each:
//   - an image that cannot be pulled: ErrImagePull or ImagePullBackOff;
//   - a crash loop: running or CrashLoopBackOff, when both sides restarted
//     it, their restart counts are at most one apart and its last
//     termination is the same. Ready and started follow the state, and
//     so do the pod's conditions, which are then taken from upstream too;
//   - a crash loop just after an exit: terminated on one side (its kubelet
//     has not synced since) and CrashLoopBackOff on the other, or still
//     running there (its kubelet has not seen the exit yet), with the same
//     restart count and that termination as the other's last one; or,
//     one cycle apart (justExited), the other in the back-off after the
//     exit before, or already running the next instance.
func alignRetryCycles(up, ours *PodView) (*PodView, []difference) {
	cp := *ours
	var notes []difference
	crashAligned := false
	align := func(kind string, a, b []ContainerView) []ContainerView {
		b = slices.Clone(b)
		for i := range b {
			if i >= len(a) || a[i].Name != b[i].Name {
				continue
			}
			if a[i].State == b[i].State {
				// Both backing off, one restart apart: the delay in the
				// message is one step apart too.
				if a[i].State == "waiting:CrashLoopBackOff" && a[i].Message != b[i].Message && oneApart(a[i].RestartCount, b[i].RestartCount) &&
					backoffDelay.ReplaceAllString(a[i].Message, "") == backoffDelay.ReplaceAllString(b[i].Message, "") {
					notes = append(notes, difference{fmt.Sprintf("%s[%d].message: upstream %q, ours %q (crash-loop restarts)", kind, i, a[i].Message, b[i].Message), true})
					b[i].Message = a[i].Message
				}
				continue
			}
			switch {
			case pullCycle[a[i].State] && pullCycle[b[i].State]:
				notes = append(notes, difference{fmt.Sprintf("%s[%d].state: upstream %q, ours %q (image pull retries)", kind, i, a[i].State, b[i].State), true})
				b[i].State, b[i].Message = a[i].State, a[i].Message
			case crashCycle[a[i].State] && crashCycle[b[i].State] && a[i].RestartCount > 0 && b[i].RestartCount > 0 &&
				a[i].RestartCount-b[i].RestartCount <= 1 && b[i].RestartCount-a[i].RestartCount <= 1 && a[i].Last == b[i].Last:
				notes = append(notes, difference{fmt.Sprintf("%s[%d].state: upstream %q, ours %q (crash-loop restarts)", kind, i, a[i].State, b[i].State), true})
				b[i].State, b[i].Message, b[i].Ready, b[i].Started = a[i].State, a[i].Message, a[i].Ready, a[i].Started
				crashAligned = true
			case a[i].RestartCount > 0 && b[i].RestartCount > 0 && justExited(a[i], b[i]):
				notes = append(notes, difference{fmt.Sprintf("%s[%d].state: upstream %q, ours %q (crash-loop restarts: exited, not synced yet)", kind, i, a[i].State, b[i].State), true})
				b[i].State, b[i].Message, b[i].Last, b[i].Ready, b[i].Started = a[i].State, a[i].Message, a[i].Last, a[i].Ready, a[i].Started
				crashAligned = true
			}
		}
		return b
	}
	cp.Init = align("init", up.Init, ours.Init)
	cp.Containers = align("containers", up.Containers, ours.Containers)
	if crashAligned && !slices.Equal(up.Conditions, ours.Conditions) {
		notes = append(notes, difference{"conditions follow the crash loop's point: upstream's taken", true})
		cp.Conditions = slices.Clone(up.Conditions)
	}
	return &cp, notes
}

// apiFlags are how to reach an endpoint: a kubelet's read-only port needs
// nothing, an API server a bearer token and its CA.
type apiFlags struct{ server, node, token, ca string }

func (a *apiFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.server, "server", "", "API server URL")
	fs.StringVar(&a.node, "node", "kk-node", "the node whose pods these are")
	fs.StringVar(&a.token, "token", "", "bearer token (an API server's)")
	fs.StringVar(&a.ca, "ca", "", "CA file to verify the server with (an API server's)")
}

// podsURL lists the node's pods on the API server.
func (a *apiFlags) podsURL() string {
	return fmt.Sprintf("%s/api/v1/pods?fieldSelector=spec.nodeName%%3D%s", a.server, a.node)
}

func (a *apiFlags) client() (*http.Client, error) {
	tr := &http.Transport{}
	if a.ca != "" {
		pem, err := os.ReadFile(a.ca)
		if err != nil {
			return nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s: no certificate", a.ca)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: tr}, nil
}

// call sends a request with body encoded as JSON (nil: none) and decodes
// the answer into out (nil: ignored); a status not in ok is an error with
// the server's answer.
func call(client *http.Client, token, method, url string, body, out any, ok ...int) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if method == http.MethodPatch {
		req.Header.Set("Content-Type", "application/strategic-merge-patch+json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if !slices.Contains(ok, resp.StatusCode) {
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, bytes.TrimSpace(data))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("%s %s: %w", method, url, err)
		}
	}
	return nil
}

// create makes a pod of each manifest of a directory through an API
// server, bound to a node, in its namespace (default when it has none);
// first, the ConfigMaps and Secrets of the --objects directory, which the
// pods may use.
func create(args []string) error {
	fs := flag.NewFlagSet("create", flag.ContinueOnError)
	waitReady := fs.Duration("wait-ready", time.Minute, "how long to wait for the Node to be Ready first")
	objects := fs.String("objects", "", "a directory of ConfigMap and Secret manifests to create first (those that exist are replaced)")
	var a apiFlags
	a.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if a.server == "" || fs.NArg() != 1 {
		return errors.New("create: want --server and one manifest directory")
	}
	client, err := a.client()
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if err := waitNodeReady(client, a.token, a.server, a.node, *waitReady); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if *objects != "" {
		if err := createObjects(client, a, *objects); err != nil {
			return fmt.Errorf("create: %w", err)
		}
	}
	type manifest struct {
		file  string
		pod   v1.Pod
		after time.Duration
	}
	var pods []manifest
	err = eachManifest(fs.Arg(0), func(f string, data []byte) error {
		m := manifest{file: f}
		if err := yaml.UnmarshalStrict(data, &m.pod); err != nil {
			return fmt.Errorf("create: %s: %w", f, err)
		}
		if v, ok := m.pod.Annotations[createAfterAnnotation]; ok {
			if m.after, err = time.ParseDuration(v); err != nil || m.after < 0 {
				return fmt.Errorf("create: %s: annotation %s: %q is not a duration", f, createAfterAnnotation, v)
			}
		}
		pods = append(pods, m)
		return nil
	})
	if err != nil {
		return err
	}
	// The pods that wait are created after the others, in the order of
	// their waits: a later creation time, which the API server sets to the
	// second, puts them after the others in either kubelet's admission.
	slices.SortStableFunc(pods, func(x, y manifest) int { return cmp.Compare(x.after, y.after) })
	start := time.Now()
	for _, m := range pods {
		time.Sleep(time.Until(start.Add(m.after)))
		pod := m.pod
		if pod.Namespace == "" {
			pod.Namespace = metav1.NamespaceDefault
		}
		pod.Spec.NodeName = a.node
		url := fmt.Sprintf("%s/api/v1/namespaces/%s/pods", a.server, pod.Namespace)
		if err := call(client, a.token, http.MethodPost, url, &pod, nil, http.StatusCreated); err != nil {
			return fmt.Errorf("create: %s: %w", m.file, err)
		}
	}
	return nil
}

// eachManifest calls f with the path and content of each *.yaml file of
// dir, in name order, until f fails.
func eachManifest(dir string, f func(path string, data []byte) error) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := f(p, data); err != nil {
			return err
		}
	}
	return nil
}

// createObjects creates (or replaces) the ConfigMaps and Secrets of dir's
// manifests, in their namespace (default when they have none).
func createObjects(client *http.Client, a apiFlags, dir string) error {
	return eachManifest(dir, func(f string, data []byte) error {
		var meta metav1.PartialObjectMetadata
		if err := yaml.Unmarshal(data, &meta); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		var obj any
		resource := ""
		switch meta.Kind {
		case "ConfigMap":
			obj, resource = new(v1.ConfigMap), "configmaps"
		case "Secret":
			obj, resource = new(v1.Secret), "secrets"
		default:
			return fmt.Errorf("%s: kind %q: only ConfigMaps and Secrets are objects", f, meta.Kind)
		}
		if err := yaml.UnmarshalStrict(data, obj); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		ns := cmp.Or(meta.Namespace, metav1.NamespaceDefault)
		url := fmt.Sprintf("%s/api/v1/namespaces/%s/%s", a.server, ns, resource)
		// Replace what an earlier run left: delete, then create.
		if err := call(client, a.token, http.MethodDelete, url+"/"+meta.Name, nil, nil, http.StatusOK, http.StatusNotFound); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if err := call(client, a.token, http.MethodPost, url, obj, nil, http.StatusCreated); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		return nil
	})
}

// clean deletes, through an API server, every pod bound to a node (grace
// 0), waits until they are gone, then deletes the Node and its Lease.
func clean(args []string) error {
	fs := flag.NewFlagSet("clean", flag.ContinueOnError)
	wait := fs.Duration("wait", time.Minute, "how long to wait for the pods to go")
	var a apiFlags
	a.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if a.server == "" {
		return errors.New("clean: --server is required")
	}
	client, err := a.client()
	if err != nil {
		return fmt.Errorf("clean: %w", err)
	}
	list := a.podsURL()
	zero := int64(0)
	deadline := time.Now().Add(*wait)
	for {
		var pods v1.PodList
		if err := call(client, a.token, http.MethodGet, list, nil, &pods, http.StatusOK); err != nil {
			return fmt.Errorf("clean: %w", err)
		}
		if len(pods.Items) == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("clean: %d pods of %s still there after %s", len(pods.Items), a.node, *wait)
		}
		for _, p := range pods.Items {
			url := fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s", a.server, p.Namespace, p.Name)
			opts := metav1.DeleteOptions{GracePeriodSeconds: &zero}
			if err := call(client, a.token, http.MethodDelete, url, &opts, nil, http.StatusOK, http.StatusAccepted, http.StatusNotFound); err != nil {
				return fmt.Errorf("clean: %w", err)
			}
		}
		time.Sleep(200 * time.Millisecond) // polling interval
	}
	for _, url := range []string{
		fmt.Sprintf("%s/api/v1/nodes/%s", a.server, a.node),
		fmt.Sprintf("%s/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/%s", a.server, a.node),
	} {
		if err := call(client, a.token, http.MethodDelete, url, nil, nil, http.StatusOK, http.StatusAccepted, http.StatusNotFound); err != nil {
			return fmt.Errorf("clean: %w", err)
		}
	}
	return nil
}

// waitNodeReady polls the Node until its Ready condition is True.
func waitNodeReady(client *http.Client, token, server, node string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	var last error
	for time.Now().Before(deadline) {
		var n v1.Node
		last = call(client, token, http.MethodGet, server+"/api/v1/nodes/"+node, nil, &n, http.StatusOK)
		if last == nil {
			for _, c := range n.Status.Conditions {
				if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
					return nil
				}
			}
			last = errors.New("not Ready")
		}
		time.Sleep(200 * time.Millisecond) // polling interval
	}
	return fmt.Errorf("node %s not Ready within %s: %w", node, wait, last)
}
