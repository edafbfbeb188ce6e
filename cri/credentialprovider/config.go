package credentialprovider

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	"sigs.k8s.io/yaml"
)

// The API versions a plugin may speak, newest first, as upstream accepts.
var pluginAPIVersions = []string{
	"credentialprovider.kubelet.k8s.io/v1",
	"credentialprovider.kubelet.k8s.io/v1beta1",
	"credentialprovider.kubelet.k8s.io/v1alpha1",
}

// configAPIVersion and configKind are what a configuration file must say.
const (
	configAPIVersion = "kubelet.config.k8s.io/v1"
	configKind       = "CredentialProviderConfig"
)

// LoadConfig reads a CredentialProviderConfig file (YAML or JSON), decoded
// strictly (an unknown field is an error naming it), and validates it as
// upstream does. Its errors name the file.
func LoadConfig(path string) (*kubeletconfigv1.CredentialProviderConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("image credential provider config: %w", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("image credential provider config %s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig decodes and validates a CredentialProviderConfig.
func ParseConfig(data []byte) (*kubeletconfigv1.CredentialProviderConfig, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("the file is empty")
	}
	cfg := &kubeletconfigv1.CredentialProviderConfig{}
	if err := yaml.UnmarshalStrict(data, cfg); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	if cfg.APIVersion != configAPIVersion || cfg.Kind != configKind {
		return nil, fmt.Errorf("apiVersion %q, kind %q: want %s %s", cfg.APIVersion, cfg.Kind, configAPIVersion, configKind)
	}
	if errs := validate(cfg); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return cfg, nil
}

// validate checks a configuration with upstream's rules and words.
func validate(cfg *kubeletconfigv1.CredentialProviderConfig) field.ErrorList {
	var errs field.ErrorList
	providers := field.NewPath("providers")
	if len(cfg.Providers) == 0 {
		errs = append(errs, field.Required(providers, "at least 1 item in plugins is required"))
	}
	seen := map[string]bool{}
	for i, p := range cfg.Providers {
		at := providers.Index(i)
		switch {
		case p.Name == "":
			errs = append(errs, field.Required(at.Child("name"), "name is required"))
		case strings.ContainsAny(p.Name, `/\`):
			errs = append(errs, field.Invalid(at.Child("name"), p.Name, "provider name cannot contain '/'"))
		case p.Name == "." || p.Name == "..":
			errs = append(errs, field.Invalid(at.Child("name"), p.Name, "provider name cannot be '.' or '..'"))
		case seen[p.Name]:
			errs = append(errs, field.Duplicate(at.Child("name"), p.Name))
		}
		seen[p.Name] = true
		if len(p.MatchImages) == 0 {
			errs = append(errs, field.Required(at.Child("matchImages"), "at least 1 item in matchImages is required"))
		}
		for j, m := range p.MatchImages {
			if err := checkMatchImage(m); err != nil {
				errs = append(errs, field.Invalid(at.Child("matchImages").Index(j), m, err.Error()))
			}
		}
		switch d := p.DefaultCacheDuration; {
		case d == nil:
			errs = append(errs, field.Required(at.Child("defaultCacheDuration"), "defaultCacheDuration is required"))
		case d.Duration < 0:
			errs = append(errs, field.Invalid(at.Child("defaultCacheDuration"), d.Duration.String(), "must be greater than or equal to 0"))
		}
		switch {
		case p.APIVersion == "":
			errs = append(errs, field.Required(at.Child("apiVersion"), "apiVersion is required"))
		case !slices.Contains(pluginAPIVersions, p.APIVersion):
			errs = append(errs, field.NotSupported(at.Child("apiVersion"), p.APIVersion, pluginAPIVersions))
		}
		for j, e := range p.Env {
			if e.Name == "" {
				errs = append(errs, field.Required(at.Child("env").Index(j).Child("name"), "name is required"))
			}
		}
		if p.TokenAttributes != nil {
			errs = append(errs, field.Forbidden(at.Child("tokenAttributes"),
				"service account tokens for credential provider plugins are not supported by this node"))
		}
	}
	return errs
}

// checkMatchImage checks a matchImages entry: a registry location whose
// host labels may be globs.
func checkMatchImage(m string) error {
	if m == "" {
		return fmt.Errorf("match image is empty")
	}
	if strings.Contains(m, "://") {
		return fmt.Errorf("match image must not have a scheme")
	}
	host, _, _ := strings.Cut(m, "/")
	for _, label := range strings.Split(strings.Split(host, ":")[0], ".") {
		if label == "" {
			return fmt.Errorf("match image has an empty domain label")
		}
	}
	return nil
}
