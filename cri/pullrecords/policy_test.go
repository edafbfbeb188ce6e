package pullrecords_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
)

func TestRequiresVerification(t *testing.T) {
	allow := mustAllow(t, "registry.example/public/*", "docker.io/library/busybox")
	for _, tc := range []struct {
		policy       pullrecords.Policy
		image        string
		pulledByNode bool
		want         bool
	}{
		{pullrecords.NeverVerify, "app", true, false},
		{pullrecords.NeverVerify, "app", false, false},
		{pullrecords.NeverVerifyPreloadedImages, "app", true, true},
		{pullrecords.NeverVerifyPreloadedImages, "app", false, false},
		{pullrecords.AlwaysVerify, "app", false, true},
		{pullrecords.AlwaysVerify, "app", true, true},
		{pullrecords.NeverVerifyAllowlistedImages, "registry.example/public/app:1", true, false},
		{pullrecords.NeverVerifyAllowlistedImages, "registry.example/public/team/app@sha256:" + hex64, false, false},
		{pullrecords.NeverVerifyAllowlistedImages, "registry.example/private/app:1", false, true},
		{pullrecords.NeverVerifyAllowlistedImages, "docker.io/library/busybox:1.36", false, false},
		{pullrecords.NeverVerifyAllowlistedImages, "busybox:1.36", false, true}, // names as written
		{pullrecords.NeverVerifyAllowlistedImages, "docker.io/library/busybox-extra", false, true},
	} {
		assert.Equal(t, tc.want, pullrecords.RequiresVerification(tc.policy, allow, tc.image, tc.pulledByNode), "%s %s %v", tc.policy, tc.image, tc.pulledByNode)
	}
}

// The allowlist's patterns, with upstream's messages
// (getAllowlistImagePattern).
func TestParseAllowlist(t *testing.T) {
	for _, tc := range []struct{ pattern, err string }{
		{"registry.example/team/app", ""},
		{"registry.example/team/*", ""},
		{"registry.example/*", ""},
		{"localhost:5000/app", ""},
		{"app", ""},
		{"", "the supplied pattern is too short: "},
		{" registry.example/app", "leading/trailing spaces are not allowed:  registry.example/app"},
		{"registry.example/app ", "leading/trailing spaces are not allowed: registry.example/app "},
		{"/*", "at least registry hostname is required"},
		{"registry.example/*/app", "not a valid wildcard pattern, only patterns ending with '/*' are allowed: registry.example/*/app"},
		{"registry.example/app*", "not a valid wildcard pattern, only patterns ending with '/*' are allowed: registry.example/app*"},
		{"*", "not a valid wildcard pattern, only patterns ending with '/*' are allowed: *"},
		{"registry.example/app:1", "neither tag nor digest is accepted in an image reference: registry.example/app:1"},
		{"registry.example/app@sha256:" + hex64, "neither tag nor digest is accepted in an image reference: registry.example/app@sha256:" + hex64},
		{"Registry.example/App", "failed to parse as an image name: repository name must be lowercase"},
		{"registry.example/app!", "failed to parse as an image name: invalid reference format"},
	} {
		_, err := pullrecords.ParseAllowlist([]string{tc.pattern})
		if tc.err == "" {
			assert.NoError(t, err, tc.pattern)
		} else {
			assert.EqualError(t, err, tc.err, tc.pattern)
		}
	}
}

func TestCheckPolicy(t *testing.T) {
	messages := func(errs []error) []string {
		var out []string
		for _, e := range errs {
			out = append(out, e.Error())
		}
		return out
	}
	assert.Empty(t, pullrecords.CheckPolicy(pullrecords.NeverVerifyPreloadedImages, nil))
	assert.Empty(t, pullrecords.CheckPolicy(pullrecords.NeverVerifyAllowlistedImages, []string{"registry.example/*"}))
	assert.Equal(t, []string{`option "Sometimes" specified for imagePullCredentialsVerificationPolicy. Valid options are "NeverVerify", "NeverVerifyPreloadedImages", "NeverVerifyAllowlistedImages" or "AlwaysVerify"`},
		messages(pullrecords.CheckPolicy("Sometimes", nil)))
	assert.Equal(t, []string{"can't set `preloadedImagesVerificationAllowlist` if `imagePullCredentialsVertificationPolicy` is not \"NeverVerifyAllowlistedImages\""},
		messages(pullrecords.CheckPolicy(pullrecords.AlwaysVerify, []string{"registry.example/*"})))
	assert.Equal(t, []string{"invalid image pattern in `preloadedImagesVerificationAllowlist`: at least registry hostname is required"},
		messages(pullrecords.CheckPolicy(pullrecords.NeverVerifyAllowlistedImages, []string{"registry.example/*", "/*"})))
}

func TestImageName(t *testing.T) {
	for image, want := range map[string]string{
		"busybox":                               "busybox",
		"busybox:1.36":                          "busybox",
		"docker.io/library/busybox:1.36":        "docker.io/library/busybox",
		"secretorg/myimage:customtag":           "secretorg/myimage",
		"testing@sha256:" + hex64:               "testing",
		"localhost:5000/app:v1@sha256:" + hex64: "localhost:5000/app",
		"[::1]:5000/app":                        "[::1]:5000/app",
	} {
		got, err := pullrecords.ImageName(image)
		assert.NoError(t, err, image)
		assert.Equal(t, want, got, image)
	}
	for image, want := range map[string]string{
		"":                              "repository name must have at least one component",
		"BusyBox":                       "repository name must be lowercase",
		"busybox:":                      "invalid reference format",
		"app@sha256:abc":                "invalid reference format",
		"app@md5:" + hex64[:32]:         "unsupported digest algorithm",
		"app@sha256:" + hex64[:40]:      "invalid checksum digest length",
		"app@sha256:" + "A" + hex64[1:]: "invalid checksum digest format",
	} {
		_, err := pullrecords.ImageName(image)
		assert.EqualError(t, err, want, image)
	}
}
