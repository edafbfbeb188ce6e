package cri_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/cri"
)

func TestSocketPath(t *testing.T) {
	tests := []struct {
		endpoint string
		want     string
		wantErr  string
	}{
		{endpoint: "unix:///run/containerd/containerd.sock", want: "/run/containerd/containerd.sock"},
		{endpoint: "/run/crio/crio.sock", want: "/run/crio/crio.sock"},
		{endpoint: "unix:///run//x/../crio.sock", want: "/run/crio.sock"},
		{endpoint: "", wantErr: "empty CRI endpoint"},
		{endpoint: "tcp://127.0.0.1:1234", wantErr: `unsupported scheme "tcp"`},
		{endpoint: "npipe:////./pipe/containerd", wantErr: `unsupported scheme "npipe"`},
		{endpoint: "unix://relative.sock", wantErr: "is not absolute"},
		{endpoint: "relative.sock", wantErr: "is not absolute"},
	}
	for _, tt := range tests {
		t.Run(tt.endpoint, func(t *testing.T) {
			got, err := cri.SocketPath(tt.endpoint)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
