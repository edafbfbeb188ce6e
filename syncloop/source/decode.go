package source

import (
	"bufio"
	"bytes"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/kubeletkit/kubeletkit/podspec/validation"
)

// MaxManifestBytes is the largest manifest a source reads: a file or an
// HTTP response past it is an error (upstream's maxConfigLength, 10 MiB).
const MaxManifestBytes = 10 << 20

// DecodeManifest decodes a YAML or JSON manifest holding one v1.Pod
// (kind Pod) or a v1.PodList (kind PodList), apiVersion v1. Only the first
// YAML document is read, as upstream. Field names are case-sensitive and
// unknown fields are ignored, as the API server's decoder does
// (ManifestWarnings names them, and the documents after the first). It neither
// defaults nor validates; see ReadManifest. An error wraps
// ErrInvalidManifest.
func DecodeManifest(data []byte) ([]*v1.Pod, error) {
	pods, _, err := decodeManifest(data, false)
	return pods, err
}

// decodeManifest is DecodeManifest; with warn it decodes strictly, in the
// same pass, and returns ManifestWarnings' findings beside the pods.
func decodeManifest(data []byte, warn bool) ([]*v1.Pod, []string, error) {
	js, yamlInput := data, false
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		// YAML (JSON is YAML too, but converting it costs 3/4 of a decode).
		var err error
		if js, err = yaml.YAMLToJSON(data); err != nil {
			return nil, nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
		}
		yamlInput = true
	}
	var tm metav1.TypeMeta
	if err := utiljson.Unmarshal(js, &tm); err != nil {
		return nil, nil, fmt.Errorf("%w: not an object: %v", ErrInvalidManifest, err)
	}
	if tm.Kind == "" {
		return nil, nil, fmt.Errorf("%w: kind is missing", ErrInvalidManifest)
	}
	if tm.APIVersion != "v1" {
		return nil, nil, fmt.Errorf("%w: apiVersion %q, want \"v1\"", ErrInvalidManifest, tm.APIVersion)
	}
	var warnings []string
	unmarshal := func(into any) error {
		if !warn {
			return utiljson.Unmarshal(js, into)
		}
		strict, err := kjson.UnmarshalStrict(js, into)
		for _, e := range strict {
			warnings = append(warnings, e.Error())
		}
		return err
	}
	var pods []*v1.Pod
	switch tm.Kind {
	case "Pod":
		pod := &v1.Pod{}
		if err := unmarshal(pod); err != nil {
			return nil, nil, fmt.Errorf("%w: pod: %v", ErrInvalidManifest, err)
		}
		pods = []*v1.Pod{pod}
	case "PodList":
		var list v1.PodList
		if err := unmarshal(&list); err != nil {
			return nil, nil, fmt.Errorf("%w: pod list: %v", ErrInvalidManifest, err)
		}
		pods = make([]*v1.Pod, len(list.Items))
		for i := range list.Items {
			pods[i] = &list.Items[i]
		}
	default:
		return nil, nil, fmt.Errorf("%w: kind %q, want Pod or PodList", ErrInvalidManifest, tm.Kind)
	}
	if warn && yamlInput && bytes.Contains(data, []byte("---")) {
		if n := yamlDocuments(data); n > 1 {
			warnings = append(warnings, fmt.Sprintf("%d YAML documents: only the first is read", n))
		}
	}
	return pods, warnings, nil
}

// ReadManifest turns a manifest of a static source into the pods a kubelet
// runs: DecodeManifest, then for each pod validation.DefaultPod,
// ApplyStaticDefaults and validation.ValidatePod (package podspec/validation:
// the API server's defaulting and validation). A pod list is all or nothing,
// as upstream: one invalid pod makes the whole manifest an error (wrapping
// ErrInvalidManifest or validation.ErrInvalidPod) and no pod is returned.
// A pod without a name is refused before the node name would suffix one.
//
// A static pod that references API objects (APIObjectReference: secrets,
// configMaps, a service account, ...) is refused, as upstream's kubelet
// refuses it ("static pods may not reference secrets"); the file and URL
// sources can allow them (FileOptions.AllowAPIReferences) for an agent
// that serves such objects itself.
func ReadManifest(data []byte, source, location, nodeName string) ([]*v1.Pod, error) {
	pods, _, err := readManifest(data, source, location, nodeName, false)
	return pods, err
}

// readManifest is ReadManifest, with ManifestWarnings' findings of the same
// decode.
func readManifest(data []byte, source, location, nodeName string, allowAPIReferences bool) ([]*v1.Pod, []string, error) {
	pods, warnings, err := decodeManifest(data, true)
	if err != nil {
		return nil, nil, err
	}
	for i, pod := range pods {
		err := validateName(pod)
		if err == nil {
			validation.DefaultPod(pod)
			ApplyStaticDefaults(pod, source, location, nodeName)
			err = validation.ValidatePod(pod)
		}
		if err == nil && !allowAPIReferences {
			err = validateAPIReferences(pod)
		}
		if err != nil {
			if len(pods) > 1 {
				return nil, nil, fmt.Errorf("item %d: %w", i, err)
			}
			return nil, nil, err
		}
	}
	return pods, warnings, nil
}

// validateName refuses a manifest without a name before the node name
// suffix would make one up.
func validateName(pod *v1.Pod) error {
	if pod.Name != "" {
		return nil
	}
	errs := field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")}
	return fmt.Errorf("%w %s: %v", validation.ErrInvalidPod, validation.PodRef(pod), errs.ToAggregate())
}

// ManifestWarnings returns what a manifest holds that DecodeManifest reads
// past without a word, as upstream's kubelet does: fields no Pod or PodList
// has (a typo such as "imagee", a volume type the API does not know), a field
// given twice, and YAML documents after the first. Each warning names the
// field by its path ("unknown field \"spec.containers[0].imagee\"") or the
// document by its number. The sources log them with the manifest's name; a
// manifest DecodeManifest refuses has none.
func ManifestWarnings(data []byte) []string {
	_, warnings, err := decodeManifest(data, true)
	if err != nil {
		return nil
	}
	return warnings
}

// yamlDocuments counts the documents of a YAML stream that hold more than
// comments and blanks.
func yamlDocuments(data []byte) int {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	n := 0
	for {
		doc, err := r.Read()
		if err != nil {
			return n
		}
		for line := range bytes.SplitSeq(doc, []byte("\n")) {
			line = bytes.TrimSpace(line)
			if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("---")) {
				n++
				break
			}
		}
	}
}
