package cri

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// NormalizeImageName spells an image name (a reference without its tag or
// digest) with its domain and path made explicit, as the container image
// libraries do: "busybox" is "docker.io/library/busybox", "someone/tool" is
// "docker.io/someone/tool", "index.docker.io/x" is "docker.io/library/x",
// and a name whose first element has a '.' or a ':', is "localhost" or has
// an upper-case letter keeps it as its domain.
func NormalizeImageName(name string) string {
	domain, rest := splitImageDomain(name)
	return domain + "/" + rest
}

// splitImageDomain splits a reference into its domain and the rest, with
// Docker Hub's defaults applied (see NormalizeImageName).
func splitImageDomain(ref string) (domain, rest string) {
	first, after, found := strings.Cut(ref, "/")
	switch {
	case !found:
		return "docker.io", "library/" + ref
	case first == "index.docker.io":
		domain, rest = "docker.io", after
	case first == "localhost", strings.ContainsAny(first, ".:"), strings.ToLower(first) != first:
		// A path element is never upper case, so such a first element
		// can only be a host.
		domain, rest = first, after
	default:
		domain, rest = "docker.io", ref
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	return domain, rest
}

// ImageRepository returns an image reference's repository: its name
// normalized (NormalizeImageName), without tag or digest.
// "busybox:1.36" is "docker.io/library/busybox".
func ImageRepository(ref string) string {
	name, _, _ := strings.Cut(ref, "@")
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	return NormalizeImageName(name)
}

// The grammar of image references (the OCI distribution one, which the
// Docker and containerd libraries share):
//
//	reference  := name [ ":" tag ] [ "@" digest ]
//	name       := [ host [ ":" port ] "/" ] component ( "/" component )*
//	component  := [a-z0-9]+ ( ( "." | "_" | "__" | "-"+ ) [a-z0-9]+ )*
//	host       := label ( "." label )* | "[" IPv6 "]"
//	tag        := [A-Za-z0-9_] [A-Za-z0-9_.-]{0,127}
//	digest     := algorithm ":" hex{32,}
var (
	imageRefPattern = func() string {
		label := `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
		host := `(?:` + label + `(?:\.` + label + `)*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?`
		component := `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
		path := component + `(?:/` + component + `)*`
		tag := `[\w][\w.-]{0,127}`
		digest := `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}`
		return `^(?:(` + host + `)/)?(` + path + `)(?::(` + tag + `))?(?:@(` + digest + `))?$`
	}()
	imageRefRegexp = regexp.MustCompile(imageRefPattern)
	imageIDRegexp  = regexp.MustCompile(`^[a-f0-9]{64}$`)
	// digestRegexp is the go-digest library's grammar of a digest whose
	// algorithm it does not know.
	digestRegexp = regexp.MustCompile(`^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-zA-Z0-9=_-]+$`)
)

// digestHexLengths are the digest algorithms upstream kubelet knows, and
// the length of their hex encodings.
var digestHexLengths = map[string]int{"sha256": 64, "sha384": 96, "sha512": 128}

// ValidateImageName checks an image reference as upstream kubelet does
// before it pulls: Docker Hub's defaults applied (NormalizeImageName),
// then the reference grammar, a lower-case repository of at most 255
// characters and a digest of a known algorithm and length. The error's
// text is upstream's, e.g. "invalid reference format: repository name
// (Local/BusyBox) must be lowercase"; upstream's container message
// prefixes it (see cri/podsync's InvalidImageName).
func ValidateImageName(image string) error {
	if imageIDRegexp.MatchString(image) {
		return fmt.Errorf("invalid repository name (%s), cannot specify 64-byte hexadecimal strings", image)
	}
	domain, rest := splitImageDomain(image)
	repo, _, _ := strings.Cut(rest, ":")
	if strings.ToLower(repo) != repo {
		return fmt.Errorf("invalid reference format: repository name (%s) must be lowercase", repo)
	}
	full := domain + "/" + rest
	m := imageRefRegexp.FindStringSubmatch(full)
	if m == nil {
		if imageRefRegexp.MatchString(strings.ToLower(full)) {
			return errors.New("repository name must be lowercase")
		}
		return errors.New("invalid reference format")
	}
	if len(m[2]) > 255 {
		return errors.New("repository name must not be more than 255 characters")
	}
	if m[4] != "" {
		return validateDigest(m[4])
	}
	return nil
}

// SplitImageReference splits an image reference as it is written, with no
// default applied, into its name (domain, if any, and path), tag and
// digest, checking it as the reference library's Parse does (upstream
// kubelet's records of pulled images key credentials by the name so
// split): "busybox:1.36" is ("busybox", "1.36", ""), and
// "quay.io/org/app:v1@sha256:…" is ("quay.io/org/app", "v1", "sha256:…").
// The errors are the library's: "invalid reference format", "repository
// name must be lowercase", "repository name must have at least one
// component", "repository name must not be more than 255 characters",
// and a digest's "invalid checksum digest format", "unsupported digest
// algorithm" or "invalid checksum digest length".
func SplitImageReference(ref string) (name, tag, digest string, err error) {
	m := imageRefRegexp.FindStringSubmatch(ref)
	switch {
	case m == nil && ref == "":
		return "", "", "", errors.New("repository name must have at least one component")
	case m == nil && imageRefRegexp.MatchString(strings.ToLower(ref)):
		return "", "", "", errors.New("repository name must be lowercase")
	case m == nil:
		return "", "", "", errors.New("invalid reference format")
	}
	if len(m[2]) > 255 {
		return "", "", "", errors.New("repository name must not be more than 255 characters")
	}
	if m[4] != "" {
		if err := validateDigest(m[4]); err != nil {
			return "", "", "", err
		}
	}
	name = m[2]
	if m[1] != "" {
		name = m[1] + "/" + m[2]
	}
	return name, m[3], m[4], nil
}

// validateDigest checks a digest as the go-digest library does, for the
// algorithms upstream kubelet knows.
func validateDigest(d string) error {
	algorithm, hex, _ := strings.Cut(d, ":")
	n, known := digestHexLengths[algorithm]
	switch {
	case !known && !digestRegexp.MatchString(d):
		return errors.New("invalid checksum digest format")
	case !known:
		return errors.New("unsupported digest algorithm")
	case len(hex) != n:
		return errors.New("invalid checksum digest length")
	case strings.ToLower(hex) != hex:
		return errors.New("invalid checksum digest format")
	}
	return nil
}
