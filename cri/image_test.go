package cri_test

import (
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
	} {
		assert.Equal(t, want, cri.ImageRepository(ref), ref)
	}
}
