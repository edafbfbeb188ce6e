package credentialprovider

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
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

// LoadConfig reads a CredentialProviderConfig (YAML or JSON), decoded
// strictly (an unknown field is an error naming it), and validates it as
// upstream does. As upstream kubelet's --image-credential-provider-config
// since 1.34, path may also be a directory: its files ending in .json,
// .yaml or .yml (not those of its subdirectories) are read in lexical
// order and their providers put in one list, a directory without such a
// file, or a provider name two files use, being an error. Errors name the
// file at fault.
func LoadConfig(path string) (*kubeletconfigv1.CredentialProviderConfig, error) {
	if path == "" {
		return nil, fmt.Errorf("image credential provider config: credential provider config path is empty")
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("image credential provider config: %w", err)
	}
	if !fi.IsDir() {
		return loadFile(path)
	}
	files, err := configFiles(path)
	if err != nil {
		return nil, err
	}
	merged := &kubeletconfigv1.CredentialProviderConfig{}
	from := map[string]string{} // provider name → its file
	for _, f := range files {
		cfg, err := readFile(f)
		if err == nil {
			err = validateProviders(cfg.Providers).ToAggregate()
		}
		if err != nil {
			return nil, fmt.Errorf("image credential provider config %s: %w", f, err)
		}
		for _, p := range cfg.Providers {
			if first, ok := from[p.Name]; ok {
				return nil, fmt.Errorf("image credential provider config %s: duplicate provider name %q found in configuration file(s): also in %s", f, p.Name, first)
			}
			from[p.Name] = f
			merged.Providers = append(merged.Providers, p)
		}
	}
	merged.APIVersion, merged.Kind = configAPIVersion, configKind
	if errs := validate(merged); len(errs) > 0 { // none of the files has a provider
		return nil, fmt.Errorf("image credential provider config %s: %w", path, errs.ToAggregate())
	}
	return merged, nil
}

// configFiles lists a configuration directory's files, in lexical order.
func configFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, fmt.Errorf("image credential provider config: %w", err)
	}
	var files []string
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".json", ".yaml", ".yml":
			if !e.IsDir() {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("image credential provider config: no configuration files found in directory %s", dir)
	}
	return files, nil
}

// loadFile reads and checks one configuration file.
func loadFile(path string) (*kubeletconfigv1.CredentialProviderConfig, error) {
	cfg, err := readFile(path)
	if err == nil {
		err = validate(cfg).ToAggregate()
	}
	if err != nil {
		return nil, fmt.Errorf("image credential provider config %s: %w", path, err)
	}
	return cfg, nil
}

// readFile reads and decodes one configuration file, unvalidated.
func readFile(path string) (*kubeletconfigv1.CredentialProviderConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decode(data)
}

// ParseConfig decodes and validates a CredentialProviderConfig.
func ParseConfig(data []byte) (*kubeletconfigv1.CredentialProviderConfig, error) {
	cfg, err := decode(data)
	if err != nil {
		return nil, err
	}
	if errs := validate(cfg); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return cfg, nil
}

// decode decodes a CredentialProviderConfig strictly and checks its type.
func decode(data []byte) (*kubeletconfigv1.CredentialProviderConfig, error) {
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
	return cfg, nil
}

// validate checks a configuration with upstream's rules and words.
func validate(cfg *kubeletconfigv1.CredentialProviderConfig) field.ErrorList {
	var errs field.ErrorList
	if len(cfg.Providers) == 0 {
		errs = append(errs, field.Required(field.NewPath("providers"), "at least 1 item in plugins is required"))
	}
	return append(errs, validateProviders(cfg.Providers)...)
}

// validateProviders checks each provider of a list (those of one file).
func validateProviders(list []kubeletconfigv1.CredentialProvider) field.ErrorList {
	var errs field.ErrorList
	providers := field.NewPath("providers")
	seen := map[string]bool{}
	for i, p := range list {
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
			errs = append(errs, validateTokenAttributes(at.Child("tokenAttributes"), p.APIVersion, p.TokenAttributes)...)
		}
	}
	return errs
}

// tokenCacheTypes are the valid tokenAttributes.cacheType values, sorted.
var tokenCacheTypes = []string{
	string(kubeletconfigv1.ServiceAccountServiceAccountTokenCacheType),
	string(kubeletconfigv1.TokenServiceAccountTokenCacheType),
}

// validateTokenAttributes checks a provider's tokenAttributes with
// upstream's rules and words.
func validateTokenAttributes(at *field.Path, apiVersion string, ta *kubeletconfigv1.ServiceAccountTokenAttributes) field.ErrorList {
	var errs field.ErrorList
	if ta.ServiceAccountTokenAudience == "" {
		errs = append(errs, field.Required(at.Child("serviceAccountTokenAudience"), ""))
	}
	if ta.RequireServiceAccount == nil {
		errs = append(errs, field.Required(at.Child("requireServiceAccount"), ""))
	}
	if apiVersion != pluginAPIVersions[0] {
		errs = append(errs, field.Forbidden(at, "tokenAttributes is only supported for "+pluginAPIVersions[0]+" API version"))
	}
	if ta.RequireServiceAccount != nil && !*ta.RequireServiceAccount && len(ta.RequiredServiceAccountAnnotationKeys) > 0 {
		errs = append(errs, field.Forbidden(at.Child("requiredServiceAccountAnnotationKeys"),
			"requireServiceAccount cannot be false when requiredServiceAccountAnnotationKeys is set"))
	}
	errs = append(errs, validateAnnotationKeys(at.Child("requiredServiceAccountAnnotationKeys"), ta.RequiredServiceAccountAnnotationKeys)...)
	errs = append(errs, validateAnnotationKeys(at.Child("optionalServiceAccountAnnotationKeys"), ta.OptionalServiceAccountAnnotationKeys)...)
	var both []string
	for _, k := range ta.RequiredServiceAccountAnnotationKeys {
		if slices.Contains(ta.OptionalServiceAccountAnnotationKeys, k) && !slices.Contains(both, k) {
			both = append(both, k)
		}
	}
	if len(both) > 0 {
		slices.Sort(both)
		errs = append(errs, field.Invalid(at, both, "annotation keys cannot be both required and optional"))
	}
	switch {
	case ta.CacheType == "":
		errs = append(errs, field.Required(at.Child("cacheType"),
			"cacheType is required to be set when tokenAttributes is specified. Supported values are: "+strings.Join(tokenCacheTypes, ", ")))
	case !slices.Contains(tokenCacheTypes, string(ta.CacheType)):
		errs = append(errs, field.NotSupported(at.Child("cacheType"), ta.CacheType, tokenCacheTypes))
	}
	return errs
}

// validateAnnotationKeys checks a list of service account annotation keys:
// each a qualified name (in any case), none twice.
func validateAnnotationKeys(at *field.Path, keys []string) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for _, k := range keys {
		for _, msg := range validation.IsQualifiedName(strings.ToLower(k)) {
			errs = append(errs, field.Invalid(at, k, msg))
		}
		if seen[k] {
			errs = append(errs, field.Duplicate(at, k))
		}
		seen[k] = true
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
