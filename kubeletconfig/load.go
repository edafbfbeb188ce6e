package kubeletconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// APIVersion and Kind are what a configuration file must say it is.
const (
	APIVersion = "kubelet.config.k8s.io/v1beta1"
	Kind       = "KubeletConfiguration"
	// DropInSuffix is the suffix of the drop-in directory's files that
	// are read; others are skipped, as upstream does.
	DropInSuffix = ".conf"
)

// ErrDecode is wrapped by every error of a file that cannot be read as a
// KubeletConfiguration.
var ErrDecode = errors.New("not a valid KubeletConfiguration")

// Files names the configuration: upstream's --config and --config-dir.
type Files struct {
	// Config is the configuration file; empty means none, and the
	// configuration starts from upstream's defaults alone.
	Config string
	// DropInDir is the drop-in directory; empty means none.
	DropInDir string
}

// Load reads the configuration of files: the file, upstream's defaults
// for what it leaves unset (SetDefaults), then the drop-ins merged over
// it. The result is not validated: the caller puts its command-line flags
// over it first, then calls Validate.
func Load(files Files) (*kubeletv1beta1.KubeletConfiguration, error) {
	kc := &kubeletv1beta1.KubeletConfiguration{}
	if files.Config != "" {
		data, err := os.ReadFile(files.Config)
		if err != nil {
			return nil, fmt.Errorf("kubelet config: %w", err)
		}
		if kc, err = Decode(files.Config, data); err != nil {
			return nil, err
		}
	}
	SetDefaults(kc)
	if files.DropInDir == "" {
		return kc, nil
	}
	if err := MergeDropIns(kc, files.DropInDir); err != nil {
		return nil, err
	}
	return kc, nil
}

// Decode reads data, the content of the file name (YAML or JSON), as a
// KubeletConfiguration, strictly: apiVersion and kind must be
// kubelet.config.k8s.io/v1beta1 KubeletConfiguration, and a field the type
// does not have, or one given twice, is an error naming it. Relative paths
// are made relative to name's directory. Nothing is defaulted.
func Decode(name string, data []byte) (*kubeletv1beta1.KubeletConfiguration, error) {
	js, err := fileJSON(name, data)
	if err != nil {
		return nil, err
	}
	kc := &kubeletv1beta1.KubeletConfiguration{}
	if err := decodeStrict(name, js, kc); err != nil {
		return nil, err
	}
	resolvePaths(kc, filepath.Dir(name))
	return kc, nil
}

// fileJSON is a file's content as JSON, its apiVersion and kind checked.
func fileJSON(name string, data []byte) ([]byte, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("kubelet config %s: %w: %w", name, ErrDecode, err)
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, fmt.Errorf("kubelet config %s: %w: the file is empty", name, ErrDecode)
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, fmt.Errorf("kubelet config %s: %w: %w", name, ErrDecode, err)
	}
	if head.APIVersion != APIVersion || head.Kind != Kind {
		return nil, fmt.Errorf("kubelet config %s: %w: apiVersion %q, kind %q: want apiVersion %s, kind %s",
			name, ErrDecode, head.APIVersion, head.Kind, APIVersion, Kind)
	}
	return js, nil
}

// decodeStrict unmarshals js over kc, refusing unknown fields by their
// path and fields spelt in another case.
func decodeStrict(name string, js []byte, kc *kubeletv1beta1.KubeletConfiguration) error {
	strict, err := sigsjson.UnmarshalStrict(js, kc)
	if err != nil {
		return fmt.Errorf("kubelet config %s: %w: %w", name, ErrDecode, err)
	}
	if len(strict) > 0 {
		return fmt.Errorf("kubelet config %s: %w: %w", name, ErrDecode, errors.Join(strict...))
	}
	return nil
}

// resolvePaths makes the configuration's relative paths relative to dir,
// the directory of the file that gave them, as upstream's loader does.
func resolvePaths(kc *kubeletv1beta1.KubeletConfiguration, dir string) {
	for _, p := range []*string{&kc.StaticPodPath, &kc.Authentication.X509.ClientCAFile, &kc.TLSCertFile,
		&kc.TLSPrivateKeyFile, kc.ResolverConfig, &kc.VolumePluginDir, &kc.PodLogsDir} {
		if p != nil && *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

// MergeDropIns merges the drop-in files of dir over kc: every file whose
// name ends in ".conf", dir's subdirectories included, in lexical order of
// their paths, each a KubeletConfiguration (apiVersion and kind, and any of
// the fields) applied as a JSON merge patch (RFC 7386) over what came
// before it. Relative paths are taken from the drop-in's own directory.
func MergeDropIns(kc *kubeletv1beta1.KubeletConfiguration, dir string) error {
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && filepath.Ext(d.Name()) == DropInSuffix {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("kubelet config drop-in dir %s: %w", dir, err)
	}
	for _, name := range files {
		if err := mergeDropIn(kc, name); err != nil {
			return err
		}
	}
	return nil
}

// mergeDropIn merges the drop-in file name over kc.
func mergeDropIn(kc *kubeletv1beta1.KubeletConfiguration, name string) error {
	data, err := os.ReadFile(name)
	if err != nil {
		return fmt.Errorf("kubelet config drop-in: %w", err)
	}
	patch, err := fileJSON(name, data)
	if err != nil {
		return err
	}
	// The drop-in alone first: its unknown fields named with its paths,
	// its relative paths resolved where it is.
	alone, err := Decode(name, data)
	if err != nil {
		return err
	}
	var patchDoc map[string]any
	if err := json.Unmarshal(patch, &patchDoc); err != nil {
		return fmt.Errorf("kubelet config %s: %w: %w", name, ErrDecode, err)
	}
	resolved, err := json.Marshal(alone)
	if err != nil {
		return fmt.Errorf("kubelet config %s: %w", name, err)
	}
	var resolvedDoc map[string]any
	if err := json.Unmarshal(resolved, &resolvedDoc); err != nil {
		return fmt.Errorf("kubelet config %s: %w", name, err)
	}
	for _, key := range pathKeys {
		copyPath(patchDoc, resolvedDoc, key)
	}
	base, err := json.Marshal(kc)
	if err != nil {
		return fmt.Errorf("kubelet config %s: %w", name, err)
	}
	var baseDoc any
	if err := json.Unmarshal(base, &baseDoc); err != nil {
		return fmt.Errorf("kubelet config %s: %w", name, err)
	}
	merged, err := json.Marshal(mergePatch(baseDoc, patchDoc))
	if err != nil {
		return fmt.Errorf("kubelet config %s: %w", name, err)
	}
	out := &kubeletv1beta1.KubeletConfiguration{}
	if err := decodeStrict(name, merged, out); err != nil {
		return err
	}
	*kc = *out
	return nil
}

// pathKeys are the JSON paths of the fields holding file paths.
var pathKeys = [][]string{{"staticPodPath"}, {"authentication", "x509", "clientCAFile"}, {"tlsCertFile"},
	{"tlsPrivateKeyFile"}, {"resolvConf"}, {"volumePluginDir"}, {"podLogsDir"}}

// copyPath sets the value at path in patch to the one in resolved, where
// patch has it.
func copyPath(patch, resolved map[string]any, path []string) {
	for len(path) > 1 {
		p, ok1 := patch[path[0]].(map[string]any)
		r, ok2 := resolved[path[0]].(map[string]any)
		if !ok1 || !ok2 {
			return
		}
		patch, resolved, path = p, r, path[1:]
	}
	if _, ok := patch[path[0]]; ok {
		if v, ok := resolved[path[0]]; ok {
			patch[path[0]] = v
		}
	}
}

// mergePatch applies patch to target as RFC 7386 says: an object merges
// member by member (null removes one), anything else replaces the target.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}
