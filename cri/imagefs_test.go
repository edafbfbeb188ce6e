package cri_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

func TestSplitContainerFs(t *testing.T) {
	fs := func(mp string) *runtimeapi.FilesystemUsage {
		return &runtimeapi.FilesystemUsage{FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: mp}}
	}
	noID := &runtimeapi.FilesystemUsage{}
	for _, tc := range []struct {
		name       string
		images, cs []*runtimeapi.FilesystemUsage
		want       bool
	}{
		{"nil answer", nil, nil, false},
		{"images only (containerd before 2.0)", []*runtimeapi.FilesystemUsage{fs("/var/lib/containerd")}, nil, false},
		{"same mountpoint", []*runtimeapi.FilesystemUsage{fs("/var/lib/containers")}, []*runtimeapi.FilesystemUsage{fs("/var/lib/containers")}, false},
		{"different mountpoints", []*runtimeapi.FilesystemUsage{fs("/mnt/images")}, []*runtimeapi.FilesystemUsage{fs("/var/lib/containers")}, true},
		{"only the first of each counts", []*runtimeapi.FilesystemUsage{fs("/a"), fs("/b")}, []*runtimeapi.FilesystemUsage{fs("/a"), fs("/c")}, false},
		{"a filesystem without an id", []*runtimeapi.FilesystemUsage{fs("/a")}, []*runtimeapi.FilesystemUsage{noID}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var info *runtimeapi.ImageFsInfoResponse
			if tc.images != nil || tc.cs != nil {
				info = &runtimeapi.ImageFsInfoResponse{ImageFilesystems: tc.images, ContainerFilesystems: tc.cs}
			}
			assert.Equal(t, tc.want, cri.SplitContainerFs(info))
		})
	}
}
