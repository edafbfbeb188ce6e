package containerconfig

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/internal/expansion"
	"github.com/kubeletkit/kubeletkit/podspec"
)

// envs resolves the container's environment as upstream does: first the
// service variables (ServiceEnv), then the keys of envFrom's configMaps and
// secrets (with their prefix, later sources overriding earlier ones), then
// env in order, each value expanding $(NAME) with the variables defined
// before it (a valueFrom is not expanded: the downward API, a configMap's or
// secret's key, a key of an env file in a volume). It returns the variables
// too, for the expansion of command and args. A failure's error has
// upstream's text as its waiting message (e.g. `configmap "x" not found`).
func (b *Builder) envs(ctx context.Context, pod *v1.Pod, c *v1.Container, podIPs []string) ([]*runtimeapi.KeyValue, map[string]string, error) {
	cms := envObjects[*v1.ConfigMap]{ctx: ctx, pod: pod, kind: "configMap", title: "ConfigMap",
		data: func(cm *v1.ConfigMap) map[string]string { return cm.Data }}
	secrets := envObjects[*v1.Secret]{ctx: ctx, pod: pod, kind: "secret", title: "Secret",
		data: func(sec *v1.Secret) map[string]string { return stringData(sec.Data) }}
	if b.opts.ConfigMaps != nil {
		cms.get = b.opts.ConfigMaps.GetConfigMap
	}
	if b.opts.Secrets != nil {
		secrets.get = b.opts.Secrets.GetSecret
	}
	services, err := b.serviceEnv(pod)
	if err != nil {
		return nil, nil, &statusError{msg: err.Error(), err: fmt.Errorf("container %s: service environment: %w", c.Name, err)}
	}
	var out []*runtimeapi.KeyValue
	vars := make(map[string]string, len(c.Env)+len(services))
	index := make(map[string]int, len(c.Env)+len(services))
	set := func(k, v string) {
		vars[k] = v
		if i, ok := index[k]; ok {
			out[i].Value = []byte(v)
			return
		}
		index[k] = len(out)
		out = append(out, &runtimeapi.KeyValue{Key: k, Value: []byte(v)})
	}
	fail := func(what string, err error) ([]*runtimeapi.KeyValue, map[string]string, error) {
		msg := err.Error()
		// An error that has its status message already (an env file's)
		// keeps it.
		if se := (*statusError)(nil); errors.As(err, &se) {
			msg = se.msg
		}
		return nil, nil, &statusError{msg: msg, err: fmt.Errorf("container %s: %s: %w", c.Name, what, err)}
	}
	// The service variables come first: everything the pod defines
	// overrides them.
	for _, k := range slices.Sorted(maps.Keys(services)) {
		set(k, services[k])
	}
	for _, from := range c.EnvFrom {
		var data map[string]string
		var err error
		switch {
		case from.ConfigMapRef != nil:
			data, err = cms.all(from.ConfigMapRef.Name, from.ConfigMapRef.Optional)
		case from.SecretRef != nil:
			data, err = secrets.all(from.SecretRef.Name, from.SecretRef.Optional)
		}
		if err != nil {
			return fail("envFrom", err)
		}
		for _, k := range slices.Sorted(maps.Keys(data)) {
			set(from.Prefix+k, data[k])
		}
	}
	// volumes are the host directories of the pod's volumes, looked up
	// for the first fileKeyRef.
	var volumes map[string]string
	for _, e := range c.Env {
		v := e.Value
		if v != "" {
			v = expansion.Expand(v, vars)
		} else if vf := e.ValueFrom; vf != nil {
			var err error
			skip := false
			switch {
			case vf.FieldRef != nil:
				v, err = b.fieldRef(pod, vf.FieldRef.FieldPath, podIPs)
			case vf.ResourceFieldRef != nil:
				v, err = resourceFieldRef(pod, c, vf.ResourceFieldRef, b.opts.NodeAllocatable)
			case vf.ConfigMapKeyRef != nil:
				ref := vf.ConfigMapKeyRef
				v, skip, err = cms.key(ref.Name, ref.Key, ref.Optional)
			case vf.SecretKeyRef != nil:
				ref := vf.SecretKeyRef
				v, skip, err = secrets.key(ref.Name, ref.Key, ref.Optional)
			case vf.FileKeyRef != nil:
				if volumes == nil {
					if volumes, err = b.volumeHostPaths(pod); err != nil {
						break
					}
				}
				v, skip, err = envFileValue(vf.FileKeyRef, volumes)
			default:
				err = errors.New("valueFrom names no source")
			}
			if err != nil {
				return fail("env "+e.Name, err)
			}
			if skip {
				continue
			}
		}
		set(e.Name, v)
	}
	return out, vars, nil
}

// envObjects looks up the configMaps (or the secrets) of one container's
// environment, each at most once.
type envObjects[T any] struct {
	ctx context.Context
	pod *v1.Pod
	// kind and title name the objects in messages, upstream's way:
	// "configMap" and "ConfigMap", "secret" and "Secret".
	kind, title string
	// get is the source; nil means none.
	get func(ctx context.Context, namespace, name string) (T, error)
	// data gives an object's keys and values.
	data func(T) map[string]string
	seen map[string]map[string]string
}

// all returns the keys and values of the named object of the pod's
// namespace; nil (and no error) when it is missing and optional.
func (o *envObjects[T]) all(name string, optional *bool) (map[string]string, error) {
	if d, ok := o.seen[name]; ok {
		return d, nil
	}
	if o.get == nil {
		return nil, fmt.Errorf("couldn't get %s %s/%s, no kubeClient defined", o.kind, o.pod.Namespace, name)
	}
	obj, err := o.get(o.ctx, o.pod.Namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) && optional != nil && *optional {
			err = nil
		}
		return nil, err
	}
	d := o.data(obj)
	if d == nil {
		d = map[string]string{}
	}
	if o.seen == nil {
		o.seen = map[string]map[string]string{}
	}
	o.seen[name] = d
	return d, nil
}

// key resolves a key reference; skip says the variable is left out (an
// optional reference to a missing object or key).
func (o *envObjects[T]) key(name, key string, optional *bool) (v string, skip bool, err error) {
	d, err := o.all(name, optional)
	if err != nil || d == nil {
		return "", err == nil, err
	}
	v, ok := d[key]
	if !ok {
		if optional != nil && *optional {
			return "", true, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in %s %s/%s", key, o.title, o.pod.Namespace, name)
	}
	return v, false, nil
}

func stringData(m map[string][]byte) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// fieldRef resolves a downward API field path.
func (b *Builder) fieldRef(pod *v1.Pod, fieldPath string, podIPs []string) (string, error) {
	if k, ok := subscript(fieldPath, "metadata.labels"); ok {
		return pod.Labels[k], nil
	}
	if k, ok := subscript(fieldPath, "metadata.annotations"); ok {
		return pod.Annotations[k], nil
	}
	switch fieldPath {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		if pod.Spec.NodeName != "" {
			return pod.Spec.NodeName, nil
		}
		return b.opts.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP":
		if len(podIPs) != 0 {
			return podIPs[0], nil
		}
		if pod.Spec.HostNetwork && len(b.opts.HostIPs) != 0 {
			return b.opts.HostIPs[0], nil
		}
		return "", nil
	case "status.podIPs":
		if len(podIPs) == 0 && pod.Spec.HostNetwork {
			return strings.Join(b.opts.HostIPs, ","), nil
		}
		return strings.Join(podIPs, ","), nil
	case "status.hostIP":
		if len(b.opts.HostIPs) != 0 {
			return b.opts.HostIPs[0], nil
		}
		return "", nil
	case "status.hostIPs":
		return strings.Join(b.opts.HostIPs, ","), nil
	}
	return "", fmt.Errorf("unsupported fieldRef %q", fieldPath)
}

// subscript parses field['key'].
func subscript(path, field string) (string, bool) {
	rest, ok := strings.CutPrefix(path, field+"['")
	if !ok {
		return "", false
	}
	return strings.CutSuffix(rest, "']")
}

// resourceFieldRef resolves limits.* and requests.* of a container; an
// unset limit is reported as upstream does without node allocatable: 0 is
// replaced by nothing, so the value is the request or empty.
// A limit the container does not set reads as the node's allocatable (its
// limit is, in effect, the node), an unset request as zero, as upstream.
func resourceFieldRef(pod *v1.Pod, c *v1.Container, ref *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	target := c
	if ref.ContainerName != "" {
		target = specContainer(pod, ref.ContainerName)
		if target == nil {
			return "", fmt.Errorf("resourceFieldRef: no container %q", ref.ContainerName)
		}
	}
	kind, name, ok := strings.Cut(ref.Resource, ".")
	if !ok {
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	var list v1.ResourceList
	switch kind {
	case "limits":
		list = target.Resources.Limits
	case "requests":
		list = target.Resources.Requests
	default:
		return "", fmt.Errorf("unsupported resource %q", ref.Resource)
	}
	q := list[v1.ResourceName(name)] // an unset request reads as zero, as upstream's
	if kind == "limits" {
		// An unset limit reads as the pod's own, else the node's allocatable.
		if q, ok = podspec.DownwardAPILimit(pod, target, v1.ResourceName(name), allocatable); !ok {
			return "", fmt.Errorf("limit %q is not set on container %s and the node's allocatable is not known", name, target.Name)
		}
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == string(v1.ResourceCPU) {
		// Round up, as upstream does for CPU.
		m, d := q.MilliValue(), divisor.MilliValue()
		return strconv.FormatInt((m+d-1)/d, 10), nil
	}
	v, d := q.Value(), divisor.Value()
	return strconv.FormatInt((v+d-1)/d, 10), nil
}

// specContainer is the pod's app or init container of that name, or nil.
func specContainer(pod *v1.Pod, name string) *v1.Container {
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		if i := slices.IndexFunc(list, func(c v1.Container) bool { return c.Name == name }); i >= 0 {
			return &list[i]
		}
	}
	return nil
}

// volumeHostPaths gives the host directories of the pod's volumes that are
// set up (none without Options.Volumes), never nil.
func (b *Builder) volumeHostPaths(pod *v1.Pod) (map[string]string, error) {
	if b.opts.Volumes == nil {
		return map[string]string{}, nil
	}
	paths, err := b.opts.Volumes.VolumeHostPaths(pod)
	if err != nil {
		return nil, fmt.Errorf("volume host paths: %w", err)
	}
	if paths == nil {
		paths = map[string]string{}
	}
	return paths, nil
}
