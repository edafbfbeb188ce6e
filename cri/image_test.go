package cri_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kubeletkit/kubeletkit/cri"
)

func TestImageRepository(t *testing.T) {
	for ref, want := range map[string]string{
		"busybox":                            "docker.io/library/busybox",
		"busybox:1.36":                       "docker.io/library/busybox",
		"someone/tool:v2":                    "docker.io/someone/tool",
		"docker.io/library/busybox:1":        "docker.io/library/busybox",
		"index.docker.io/nginx":              "docker.io/library/nginx",
		"registry.k8s.io/pause:3.10":         "registry.k8s.io/pause",
		"localhost:5000/app:dev":             "localhost:5000/app",
		"localhost/app":                      "localhost/app",
		"quay.io/org/app@sha256:0123abcdef":  "quay.io/org/app",
		"quay.io/org/app:1@sha256:0123abcde": "quay.io/org/app",
		"Registry/app":                       "Registry/app", // an upper-case first element is a host
	} {
		assert.Equal(t, want, cri.ImageRepository(ref), ref)
	}
}

func TestValidateImageName(t *testing.T) {
	sha := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct{ image, want string }{
		{"busybox", ""},
		{"busybox:1.36", ""},
		{"docker.io/local/busybox:1", ""},
		{"registry.k8s.io/pause:3.10", ""},
		{"localhost:5000/a/b-c__d.e:tag_1", ""},
		{"[::1]:5000/app:v1", ""},
		{"quay.io/org/app@" + sha, ""},
		{"quay.io/org/app:v1@" + sha, ""},
		{"Registry.Example/app", ""},
		{"docker.io/Local/BusyBox:1", "invalid reference format: repository name (Local/BusyBox) must be lowercase"},
		{"BusyBox", "invalid reference format: repository name (library/BusyBox) must be lowercase"},
		{"", "invalid reference format"},
		{"busybox:", "invalid reference format"},
		{"busy box", "invalid reference format"},
		{"busybox:-bad", "invalid reference format"},
		{"app:" + strings.Repeat("t", 129), "invalid reference format"},
		{"a/" + strings.Repeat("b", 260), "repository name must not be more than 255 characters"},
		{strings.Repeat("ab", 32), "invalid repository name (" + strings.Repeat("ab", 32) + "), cannot specify 64-byte hexadecimal strings"},
		{"app@md5:" + strings.Repeat("a", 32), "unsupported digest algorithm"},
		{"app@sha256:" + strings.Repeat("a", 40), "invalid checksum digest length"},
		{"app@sha256:" + strings.Repeat("A", 64), "invalid checksum digest format"},
	} {
		err := cri.ValidateImageName(tc.image)
		if tc.want == "" {
			assert.NoError(t, err, tc.image)
			continue
		}
		assert.EqualError(t, err, tc.want, tc.image)
	}
}
