package topologymanager_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/internal/golden"
	"github.com/kubeletkit/kubeletkit/topologymanager"
	"github.com/kubeletkit/kubeletkit/topologymanager/topologymanagertest"
)

// TestGolden replays testdata/*.txt (see internal/golden for the format)
// against a Manager with fake providers. Commands:
//
//	new policy=P scope=S nodes=0,1 [option=value ...]  a fresh Manager
//	provider NAME                                      add a fake provider
//	hints NAME POD[/CONTAINER] RESOURCE HINT...        what NAME hints for the
//	    container (or, without /CONTAINER, the pod); a HINT is {0,1}+ (preferred),
//	    {0}- (not), any+; "nil" alone is a nil slice, "none" alone an empty one
//	fail NAME POD/CONTAINER smt|plain                  Allocate fails
//	admit POD [init=a,b] containers=c,d                Admit; prints the providers'
//	    calls and the answer
//	affinity POD CONTAINER                             what the Store holds
//	remove POD                                         RemovePod
//
// Run with -update to rewrite the expected output.
func TestGolden(t *testing.T) {
	golden.Run(t, func(t *testing.T) func(golden.Case) []string {
		h := &harness{}
		return func(c golden.Case) []string {
			out, err := h.exec(c.Fields())
			if err != nil {
				t.Fatalf("%s:%d: %s: %v", c.File, c.Line, c.Command, err)
			}
			return out
		}
	})
}

type harness struct {
	m         *topologymanager.Manager
	providers map[string]*topologymanagertest.Provider
	// hints[provider][key] by resource; key "pod/container" or "pod".
	hints map[string]map[string]map[string][]topologymanager.Hint
	fails map[string]map[string]error
	log   []string
}

func (h *harness) exec(f []string) ([]string, error) {
	switch f[0] {
	case "new":
		opts := topologymanager.Options{PolicyOptions: map[string]string{}}
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "policy":
				opts.Policy = v
			case "scope":
				opts.Scope = v
			case "nodes":
				for _, s := range strings.Split(v, ",") {
					n, err := strconv.Atoi(s)
					if err != nil {
						return nil, err
					}
					opts.NUMANodes = append(opts.NUMANodes, n)
				}
			default:
				opts.PolicyOptions[k] = v
			}
		}
		m, err := topologymanager.New(opts)
		if err != nil {
			return []string{"error: " + err.Error()}, nil
		}
		*h = harness{m: m, providers: map[string]*topologymanagertest.Provider{},
			hints: map[string]map[string]map[string][]topologymanager.Hint{}, fails: map[string]map[string]error{}}
		return nil, nil
	case "provider":
		name := f[1]
		p := &topologymanagertest.Provider{
			Name:   name,
			Store:  h.m,
			OnCall: func(c topologymanagertest.Call) { h.log = append(h.log, c.String()) },
			ContainerHintsFunc: func(pod *v1.Pod, c *v1.Container) map[string][]topologymanager.Hint {
				return h.hints[name][string(pod.UID)+"/"+c.Name]
			},
			PodHintsFunc: func(pod *v1.Pod) map[string][]topologymanager.Hint {
				return h.hints[name][string(pod.UID)]
			},
			AllocateFunc: func(pod *v1.Pod, c *v1.Container) error {
				return h.fails[name][string(pod.UID)+"/"+c.Name]
			},
		}
		h.providers[name] = p
		h.hints[name] = map[string]map[string][]topologymanager.Hint{}
		h.fails[name] = map[string]error{}
		h.m.AddHintProvider(p)
		return nil, nil
	case "hints":
		name, key, resource := f[1], f[2], f[3]
		hs, err := parseHints(f[4:])
		if err != nil {
			return nil, err
		}
		if h.hints[name][key] == nil {
			h.hints[name][key] = map[string][]topologymanager.Hint{}
		}
		h.hints[name][key][resource] = hs
		return nil, nil
	case "fail":
		var err error = smtError{}
		if f[3] == "plain" {
			err = errors.New("not enough cpus available to satisfy request")
		}
		h.fails[f[1]][f[2]] = err
		return nil, nil
	case "admit":
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: f[1], Namespace: "default", UID: k8stypes.UID(f[1])}}
		for _, kv := range f[2:] {
			k, v, _ := strings.Cut(kv, "=")
			for _, n := range strings.Split(v, ",") {
				if k == "init" {
					pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: n})
				} else {
					pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: n})
				}
			}
		}
		h.log = nil
		ok, reason, msg := h.m.Admit(pod, nil)
		out := append([]string(nil), h.log...)
		if ok {
			return append(out, "admitted"), nil
		}
		return append(out, fmt.Sprintf("refused %s: %s", reason, msg)), nil
	case "affinity":
		return []string{h.m.Affinity(k8stypes.UID(f[1]), f[2]).String()}, nil
	case "remove":
		h.m.RemovePod(k8stypes.UID(f[1]))
		return []string{fmt.Sprintf("pods with affinities: %d", h.m.Pods())}, nil
	}
	return nil, fmt.Errorf("unknown command %q", f[0])
}

func parseHints(tokens []string) ([]topologymanager.Hint, error) {
	if len(tokens) == 1 && tokens[0] == "nil" {
		return nil, nil
	}
	if len(tokens) == 1 && tokens[0] == "none" {
		return []topologymanager.Hint{}, nil
	}
	var out []topologymanager.Hint
	for _, tok := range tokens {
		var h topologymanager.Hint
		switch {
		case strings.HasSuffix(tok, "+"):
			h.Preferred = true
		case strings.HasSuffix(tok, "-"):
		default:
			return nil, fmt.Errorf("hint %q: want a + or - suffix", tok)
		}
		body := tok[:len(tok)-1]
		if body != "any" {
			body = strings.TrimSuffix(strings.TrimPrefix(body, "{"), "}")
			for _, s := range strings.Split(body, ",") {
				n, err := strconv.Atoi(s)
				if err != nil {
					return nil, fmt.Errorf("hint %q: %w", tok, err)
				}
				h.NUMANodes |= topologymanager.NewMask(n)
			}
		}
		out = append(out, h)
	}
	return out, nil
}
