package cri_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/cri"
)

func TestIdentityLabels(t *testing.T) {
	assert.Equal(t, map[string]string{
		"io.kubernetes.pod.uid":       "u1",
		"io.kubernetes.pod.name":      "web",
		"io.kubernetes.pod.namespace": "prod",
	}, cri.PodLabels("u1", "web", "prod"))
	l := cri.ContainerLabels("u1", "web", "prod", "app")
	assert.Equal(t, "app", l["io.kubernetes.container.name"])
	assert.Equal(t, types.UID("u1"), cri.PodUIDFromLabels(l))
	assert.Equal(t, types.UID(""), cri.PodUIDFromLabels(nil))
}

func TestRestartCountFromAnnotations(t *testing.T) {
	tests := []struct {
		name    string
		ann     map[string]string
		want    int
		wantErr bool
	}{
		{name: "missing counts as zero", ann: nil, want: 0},
		{name: "decimal", ann: map[string]string{cri.ContainerRestartCountAnnotation: "7"}, want: 7},
		{name: "malformed", ann: map[string]string{cri.ContainerRestartCountAnnotation: "seven"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cri.RestartCountFromAnnotations(tt.ann)
			if tt.wantErr {
				require.ErrorIs(t, err, strconv.ErrSyntax)
				assert.ErrorContains(t, err, cri.ContainerRestartCountAnnotation)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestHashFromAnnotations(t *testing.T) {
	tests := []struct {
		name    string
		ann     map[string]string
		want    uint64
		wantOK  bool
		wantErr bool
	}{
		{name: "missing", ann: map[string]string{}},
		{name: "hexadecimal, as upstream writes it", ann: map[string]string{cri.ContainerHashAnnotation: "ff0a"}, want: 0xff0a, wantOK: true},
		{name: "malformed", ann: map[string]string{cri.ContainerHashAnnotation: "xyz"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := cri.HashFromAnnotations(tt.ann)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}
