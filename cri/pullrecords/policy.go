package pullrecords

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kubeletkit/kubeletkit/cri"
)

// Policy says which images already on the node a pod must show its
// credentials for: upstream's imagePullCredentialsVerificationPolicy.
type Policy string

// The policies, upstream's.
const (
	// NeverVerify: any pod may use any image on the node.
	NeverVerify Policy = "NeverVerify"
	// NeverVerifyPreloadedImages: images the node did not pull itself
	// (there before it kept records, or pulled by something else) may be
	// used by any pod; those it pulled need the credentials that pulled
	// them. Upstream's default.
	NeverVerifyPreloadedImages Policy = "NeverVerifyPreloadedImages"
	// NeverVerifyAllowlistedImages: only the images of the allowlist
	// (Options.Allowlist, upstream's preloadedImagesVerificationAllowlist)
	// may be used by any pod, however they came to the node.
	NeverVerifyAllowlistedImages Policy = "NeverVerifyAllowlistedImages"
	// AlwaysVerify: every image needs credentials that pulled it, or no
	// credentials at all.
	AlwaysVerify Policy = "AlwaysVerify"
)

// DefaultPolicy is upstream's default policy.
const DefaultPolicy = NeverVerifyPreloadedImages

// CheckPolicy checks a policy and its allowlist as upstream's kubelet
// validates its configuration, and returns one error per problem, with
// upstream's messages (without their "invalid configuration: " prefix): a
// policy that is none of the four, an allowlist beside another policy, a
// pattern of the allowlist that does not parse (ParseAllowlist). None:
// nil.
func CheckPolicy(p Policy, allowlist []string) []error {
	var errs []error
	switch p {
	case NeverVerify, NeverVerifyPreloadedImages, NeverVerifyAllowlistedImages, AlwaysVerify:
	default:
		errs = append(errs, fmt.Errorf("option %q specified for imagePullCredentialsVerificationPolicy. Valid options are %q, %q, %q or %q",
			p, NeverVerify, NeverVerifyPreloadedImages, NeverVerifyAllowlistedImages, AlwaysVerify))
	}
	if len(allowlist) > 0 && p != NeverVerifyAllowlistedImages {
		// Upstream's message, its typo included.
		errs = append(errs, errors.New("can't set `preloadedImagesVerificationAllowlist` if `imagePullCredentialsVertificationPolicy` is not \"NeverVerifyAllowlistedImages\""))
	} else if _, err := ParseAllowlist(allowlist); err != nil {
		errs = append(errs, fmt.Errorf("invalid image pattern in `preloadedImagesVerificationAllowlist`: %w", err))
	}
	return errs
}

// Allowlist is the images NeverVerifyAllowlistedImages lets any pod use:
// upstream's preloadedImagesVerificationAllowlist, parsed. The zero value
// allows none.
type Allowlist struct {
	exact    map[string]bool
	prefixes []string
}

// ParseAllowlist parses the patterns of an allowlist, with upstream's
// rules and messages: an image name without tag or digest
// ("registry.example/team/app") matches that name, and a prefix ending in
// "/*" ("registry.example/team/*") every name under it; no leading or
// trailing space, no other '*'.
func ParseAllowlist(patterns []string) (Allowlist, error) {
	a := Allowlist{exact: map[string]bool{}}
	for _, p := range patterns {
		pattern, wildcard, err := parsePattern(p)
		if err != nil {
			return Allowlist{}, err
		}
		if wildcard {
			a.prefixes = append(a.prefixes, pattern)
		} else {
			a.exact[pattern] = true
		}
	}
	return a, nil
}

// parsePattern is upstream's getAllowlistImagePattern.
func parsePattern(pattern string) (string, bool, error) {
	if pattern != strings.TrimSpace(pattern) {
		return "", false, fmt.Errorf("leading/trailing spaces are not allowed: %s", pattern)
	}
	trimmed, wildcard := pattern, false
	if strings.HasSuffix(pattern, "/*") {
		trimmed, wildcard = strings.TrimSuffix(pattern, "*"), true
	}
	switch {
	case trimmed == "":
		return "", false, fmt.Errorf("the supplied pattern is too short: %s", pattern)
	case strings.ContainsRune(trimmed, '*'):
		return "", false, fmt.Errorf("not a valid wildcard pattern, only patterns ending with '/*' are allowed: %s", pattern)
	case wildcard && len(trimmed) == 1:
		return "", false, errors.New("at least registry hostname is required")
	case wildcard:
		return trimmed, true, nil
	}
	name, err := ImageName(trimmed)
	if err != nil {
		return "", false, fmt.Errorf("failed to parse as an image name: %w", err)
	}
	if name != trimmed {
		return "", false, fmt.Errorf("neither tag nor digest is accepted in an image reference: %s", pattern)
	}
	return trimmed, false, nil
}

// Matches says whether the allowlist lets any pod use image (a
// container's image field): its name without tag or digest, as written
// (or the whole of it when it does not parse, as upstream's best effort),
// is listed or is under a listed prefix.
func (a Allowlist) Matches(image string) bool {
	name, err := ImageName(image)
	if err != nil {
		name = image
	}
	if a.exact[name] {
		return true
	}
	for _, p := range a.prefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// ImageName is a container's image field without its tag and digest, as
// written (no registry or namespace added): the key of a record's
// credentials. It fails for an image that does not parse
// (cri.SplitImageReference).
func ImageName(image string) (string, error) {
	name, _, _, err := cri.SplitImageReference(image)
	return name, err
}

// RequiresVerification says whether the policy asks that a pod show its
// credentials for image, an image present on the node; pulledByNode says
// whether the node pulled it itself (it has a record of the image, or of
// an intent to pull it), as upstream's ImagePullPolicyEnforcer.
func RequiresVerification(p Policy, allow Allowlist, image string, pulledByNode bool) bool {
	switch p {
	case NeverVerify:
		return false
	case NeverVerifyPreloadedImages:
		return pulledByNode
	case NeverVerifyAllowlistedImages:
		return !allow.Matches(image)
	}
	return true
}
