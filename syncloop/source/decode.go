package source

import (
	"bytes"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// MaxManifestBytes is the largest manifest a source reads: a file or an
// HTTP response past it is an error (upstream's maxConfigLength, 10 MiB).
const MaxManifestBytes = 10 << 20

// DecodeManifest decodes a YAML or JSON manifest holding one v1.Pod
// (kind Pod) or a v1.PodList (kind PodList), apiVersion v1. Only the first
// YAML document is read, as upstream. Field names are case-sensitive and
// unknown fields are ignored, as the API server's decoder does. It neither
// defaults nor validates; see ReadManifest. An error wraps
// ErrInvalidManifest.
func DecodeManifest(data []byte) ([]*v1.Pod, error) {
	js := data
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		// YAML (JSON is YAML too, but converting it costs 3/4 of a decode).
		var err error
		if js, err = yaml.YAMLToJSON(data); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
		}
	}
	var tm metav1.TypeMeta
	if err := utiljson.Unmarshal(js, &tm); err != nil {
		return nil, fmt.Errorf("%w: not an object: %v", ErrInvalidManifest, err)
	}
	if tm.Kind == "" {
		return nil, fmt.Errorf("%w: kind is missing", ErrInvalidManifest)
	}
	if tm.APIVersion != "v1" {
		return nil, fmt.Errorf("%w: apiVersion %q, want \"v1\"", ErrInvalidManifest, tm.APIVersion)
	}
	switch tm.Kind {
	case "Pod":
		pod := &v1.Pod{}
		if err := utiljson.Unmarshal(js, pod); err != nil {
			return nil, fmt.Errorf("%w: pod: %v", ErrInvalidManifest, err)
		}
		return []*v1.Pod{pod}, nil
	case "PodList":
		var list v1.PodList
		if err := utiljson.Unmarshal(js, &list); err != nil {
			return nil, fmt.Errorf("%w: pod list: %v", ErrInvalidManifest, err)
		}
		pods := make([]*v1.Pod, len(list.Items))
		for i := range list.Items {
			pods[i] = &list.Items[i]
		}
		return pods, nil
	}
	return nil, fmt.Errorf("%w: kind %q, want Pod or PodList", ErrInvalidManifest, tm.Kind)
}

// ReadManifest turns a manifest of a static source into the pods a kubelet
// runs: DecodeManifest, then for each pod DefaultPod, ApplyStaticDefaults
// and ValidatePod. A pod list is all or nothing, as upstream: one invalid pod
// makes the whole manifest an error (wrapping ErrInvalidManifest or
// ErrInvalidPod) and no pod is returned.
//
// A static pod that references API objects (APIObjectReference: secrets,
// configMaps, a service account, ...) is refused, as upstream's kubelet
// refuses it ("static pods may not reference secrets"); the file and URL
// sources can allow them (FileOptions.AllowAPIReferences) for an agent
// that serves such objects itself.
func ReadManifest(data []byte, source, location, nodeName string) ([]*v1.Pod, error) {
	return readManifest(data, source, location, nodeName, false)
}

func readManifest(data []byte, source, location, nodeName string, allowAPIReferences bool) ([]*v1.Pod, error) {
	pods, err := DecodeManifest(data)
	if err != nil {
		return nil, err
	}
	for i, pod := range pods {
		err := validateName(pod)
		if err == nil {
			DefaultPod(pod)
			ApplyStaticDefaults(pod, source, location, nodeName)
			err = ValidatePod(pod)
		}
		if err == nil && !allowAPIReferences {
			err = validateAPIReferences(pod)
		}
		if err != nil {
			if len(pods) > 1 {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			return nil, err
		}
	}
	return pods, nil
}

// validateName refuses a manifest without a name before the node name
// suffix would make one up.
func validateName(pod *v1.Pod) error {
	if pod.Name != "" {
		return nil
	}
	errs := field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")}
	return fmt.Errorf("%w %s: %v", ErrInvalidPod, podRef(pod), errs.ToAggregate())
}

// ValidatePod checks what a kubelet needs of a pod from a static source, as a
// subset of the API server's validation: a name that is a DNS-1123
// subdomain, a namespace that is a DNS-1123 label, at least one container,
// container names (init, regular and ephemeral together) that are DNS-1123
// labels and unique, a non-empty image in every container, lifecycle
// sleep actions within the termination grace period, a restartPolicy and
// dnsPolicy among the known values, labels and annotations (syntax and
// size), one source per volume with relative item paths free of "..", one
// handler per probe with non-negative numbers, and subPaths free of "..".
// Every problem is listed, with its field path and upstream's message, in
// an error that wraps ErrInvalidPod.
func ValidatePod(pod *v1.Pod) error {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	if pod.Name == "" {
		errs = append(errs, field.Required(meta.Child("name"), "name or generateName is required"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(pod.Name) {
			errs = append(errs, field.Invalid(meta.Child("name"), pod.Name, msg))
		}
	}
	if pod.Namespace != "" {
		for _, msg := range validation.IsDNS1123Label(pod.Namespace) {
			errs = append(errs, field.Invalid(meta.Child("namespace"), pod.Namespace, msg))
		}
	}
	spec := field.NewPath("spec")
	if len(pod.Spec.Containers) == 0 {
		errs = append(errs, field.Required(spec.Child("containers"), ""))
	}
	names := map[string]bool{}
	checkName := func(path *field.Path, c *v1.Container) {
		if c.Name == "" {
			errs = append(errs, field.Required(path.Child("name"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Label(c.Name) {
				errs = append(errs, field.Invalid(path.Child("name"), c.Name, msg))
			}
			if names[c.Name] {
				errs = append(errs, field.Duplicate(path.Child("name"), c.Name))
			}
			names[c.Name] = true
		}
		if c.Image == "" {
			errs = append(errs, field.Required(path.Child("image"), ""))
		}
	}
	checkSleep := func(path *field.Path, h *v1.LifecycleHandler) {
		grace := pod.Spec.TerminationGracePeriodSeconds
		if h == nil || h.Sleep == nil || grace == nil {
			return
		}
		if h.Sleep.Seconds < 0 || h.Sleep.Seconds > *grace {
			errs = append(errs, field.Invalid(path.Child("sleep"), h.Sleep.Seconds,
				fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *grace)))
		}
	}
	check := func(path *field.Path, c *v1.Container) {
		checkName(path, c)
		if c.Lifecycle != nil {
			checkSleep(path.Child("lifecycle", "postStart"), c.Lifecycle.PostStart)
			checkSleep(path.Child("lifecycle", "preStop"), c.Lifecycle.PreStop)
		}
	}
	for i := range pod.Spec.InitContainers {
		check(spec.Child("initContainers").Index(i), &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		check(spec.Child("containers").Index(i), &pod.Spec.Containers[i])
	}
	for i := range pod.Spec.EphemeralContainers {
		checkName(spec.Child("ephemeralContainers").Index(i), (*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	switch pod.Spec.RestartPolicy {
	case v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever:
	default:
		errs = append(errs, field.NotSupported(spec.Child("restartPolicy"), pod.Spec.RestartPolicy,
			[]string{string(v1.RestartPolicyAlways), string(v1.RestartPolicyOnFailure), string(v1.RestartPolicyNever)}))
	}
	switch pod.Spec.DNSPolicy {
	case v1.DNSClusterFirst, v1.DNSClusterFirstWithHostNet, v1.DNSDefault, v1.DNSNone:
	default:
		errs = append(errs, field.NotSupported(spec.Child("dnsPolicy"), pod.Spec.DNSPolicy,
			[]string{string(v1.DNSClusterFirst), string(v1.DNSClusterFirstWithHostNet), string(v1.DNSDefault), string(v1.DNSNone)}))
	}
	errs = append(errs, validateMore(pod)...)
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w %s: %v", ErrInvalidPod, podRef(pod), errs.ToAggregate())
}

// podRef names a pod in messages: "namespace/name", or "<no name>".
func podRef(pod *v1.Pod) string {
	if pod.Name == "" {
		return "<no name>"
	}
	if pod.Namespace == "" {
		return pod.Name
	}
	return pod.Namespace + "/" + pod.Name
}
