package volume

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/volume/atomicwriter"
)

func downwardAPIPayload(alloc v1.ResourceList) payloadFunc {
	return func(_ context.Context, v *Volume) (map[string]atomicwriter.File, error) {
		s := v.Spec.DownwardAPI
		files := map[string]atomicwriter.File{}
		if err := downwardAPIFiles(files, v.Pod, s.Items, defaultOr(s.DefaultMode), alloc); err != nil {
			return nil, err
		}
		return files, nil
	}
}

// downwardAPIFiles adds one file per item.
func downwardAPIFiles(files map[string]atomicwriter.File, pod *v1.Pod, items []v1.DownwardAPIVolumeFile, def int32, alloc v1.ResourceList) error {
	for _, it := range items {
		mode, err := fileMode("downwardAPI item "+it.Path, it.Mode, def)
		if err != nil {
			return err
		}
		var val string
		switch {
		case it.FieldRef != nil:
			val, err = downwardField(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			val, err = downwardResource(pod, it.ResourceFieldRef, alloc)
		default:
			err = fmt.Errorf("%w: downwardAPI item %q has neither fieldRef nor resourceFieldRef", ErrInvalidVolume, it.Path)
		}
		if err != nil {
			return fmt.Errorf("downwardAPI item %q: %w", it.Path, err)
		}
		if err := addFile(files, "downwardAPI item", it.Path, []byte(val), mode); err != nil {
			return err
		}
	}
	return nil
}

// downwardField resolves the field paths a downwardAPI volume may use.
func downwardField(pod *v1.Pod, path string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "metadata.labels":
		return formatMap(pod.Labels), nil
	case "metadata.annotations":
		return formatMap(pod.Annotations), nil
	}
	if k, ok := subscript(path, "metadata.labels"); ok {
		return pod.Labels[k], nil
	}
	if k, ok := subscript(path, "metadata.annotations"); ok {
		return pod.Annotations[k], nil
	}
	return "", fmt.Errorf("%w: fieldPath %q in a downwardAPI volume", ErrUnsupported, path)
}

// subscript parses field['key'].
func subscript(path, field string) (string, bool) {
	rest, ok := strings.CutPrefix(path, field+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// formatMap writes a map as upstream does: sorted key="quoted value" lines.
func formatMap(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strconv.Quote(m[k]))
	}
	return b.String()
}

// downwardResource resolves limits.* and requests.* of a named container;
// an unset limit is the node's allocatable, as upstream.
func downwardResource(pod *v1.Pod, ref *v1.ResourceFieldSelector, alloc v1.ResourceList) (string, error) {
	if ref.ContainerName == "" {
		return "", fmt.Errorf("%w: resourceFieldRef %q needs a containerName in a volume", ErrInvalidVolume, ref.Resource)
	}
	var c *v1.Container
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == ref.ContainerName {
				c = &list[i]
			}
		}
	}
	if c == nil {
		return "", fmt.Errorf("%w: resourceFieldRef: no container %q", ErrInvalidVolume, ref.ContainerName)
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok || (kind != "limits" && kind != "requests") {
		return "", fmt.Errorf("%w: resource %q", ErrUnsupported, ref.Resource)
	}
	var q resource.Quantity
	if kind == "limits" {
		var set bool
		// An unset limit reads as the pod's own, else the node's allocatable.
		if q, set = podspec.DownwardAPILimit(pod, c, v1.ResourceName(name), alloc); !set {
			return "", fmt.Errorf("limit %q is not set on container %s and the node's allocatable is not known (Options.NodeAllocatable)", name, c.Name)
		}
	} else {
		q = c.Resources.Requests[v1.ResourceName(name)]
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == string(v1.ResourceCPU) {
		m, d := q.MilliValue(), divisor.MilliValue()
		return strconv.FormatInt((m+d-1)/d, 10), nil
	}
	val, d := q.Value(), divisor.Value()
	return strconv.FormatInt((val+d-1)/d, 10), nil
}
