package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kubeletkit/kubeletkit/cri"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Names of the benchmark's pods: every pod is prefix + something, so that
// the harness finds its own pods in /pods and in a shared runtime.
const (
	podPrefix = "bench-"
	extraName = podPrefix + "extra"
	// podNameLabel is the label both kubelets put on a sandbox and its
	// containers: the pod's name.
	podNameLabel = "io.kubernetes.pod.name"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: bench manifests|run|clean|table ...")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "manifests":
		err = manifests(os.Args[2:])
	case "run":
		err = run(os.Args[2:])
	case "clean":
		err = clean(os.Args[2:])
	case "table":
		err = table(os.Args[2:], os.Stdout)
	default:
		err = fmt.Errorf("unknown command %q (manifests, run, clean or table)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// benchPod is the pod every manifest holds, under its own name: one
// container that sleeps and exits 0 as soon as it gets SIGTERM (a shell as
// PID 1 ignores the signal unless it traps it), so that deleting it times
// the kubelet, not a grace period. It has no probe: a kubelet reports it
// Ready as soon as its container runs.
func benchPod(name, image string) *v1.Pod {
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{
				Name:            "main",
				Image:           image,
				ImagePullPolicy: v1.PullIfNotPresent,
				Command:         []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
			}},
		},
	}
}

// writePod writes pod's manifest to path.
func writePod(path string, pod *v1.Pod) error {
	data, err := yaml.Marshal(pod)
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

func manifests(args []string) error {
	fs := flag.NewFlagSet("manifests", flag.ContinueOnError)
	dir := fs.String("dir", "", "the static pod directory to fill; required")
	n := fs.Int("n", 10, "how many pods")
	extra := fs.String("extra", "", "where to write the extra pod's manifest (outside --dir, on the same filesystem); required")
	image := fs.String("image", "docker.io/local/busybox:1", "the containers' image")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || *extra == "" {
		return errors.New("manifests: --dir and --extra are required")
	}
	if filepath.Dir(filepath.Clean(*extra)) == filepath.Clean(*dir) {
		return errors.New("manifests: --extra must be outside --dir")
	}
	for _, d := range []string{*dir, filepath.Dir(*extra)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("manifests: %w", err)
		}
	}
	for i := 1; i <= *n; i++ {
		name := fmt.Sprintf("%s%04d", podPrefix, i)
		if err := writePod(filepath.Join(*dir, name+".yaml"), benchPod(name, *image)); err != nil {
			return fmt.Errorf("manifests: %w", err)
		}
	}
	if err := writePod(*extra, benchPod(extraName, *image)); err != nil {
		return fmt.Errorf("manifests: %w", err)
	}
	return nil
}

// clean removes the runtime's sandboxes of the benchmark's pods.
func clean(args []string) error {
	fs := flag.NewFlagSet("clean", flag.ContinueOnError)
	endpoint := fs.String("cri", "", "the runtime's CRI endpoint; required")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *endpoint == "" {
		return errors.New("clean: --cri is required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt, err := cri.Dial(ctx, *endpoint, cri.DialOptions{})
	if err != nil {
		return fmt.Errorf("clean: %w", err)
	}
	defer rt.Close()
	sandboxes, err := rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("clean: %w", err)
	}
	var errs []error
	for _, s := range sandboxes {
		if !strings.HasPrefix(s.GetLabels()[podNameLabel], podPrefix) {
			continue
		}
		if err := rt.StopPodSandbox(ctx, s.GetId()); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, rt.RemovePodSandbox(ctx, s.GetId()))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clean: %w", err)
	}
	return nil
}
