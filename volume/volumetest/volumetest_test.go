package volumetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/kubeletkit/kubeletkit/volume/volumetest"
)

func TestMounter(t *testing.T) {
	var m volumetest.Mounter
	require.NoError(t, m.Mount("tmpfs", "/a/", "tmpfs", []string{"size=1"}))
	assert.Error(t, m.Mount("tmpfs", "/a", "tmpfs", nil), "already mounted")
	ok, err := m.IsMountPoint("/a")
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, m.Unmount("/a"))
	assert.Error(t, m.Unmount("/a"), "not mounted")
	assert.Len(t, m.Calls(), 4)
	assert.Empty(t, m.Mounted())
}

func TestTokens(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tok := &volumetest.Tokens{Now: func() time.Time { return now }}
	exp := int64(600)
	resp, err := tok.GetServiceAccountToken(context.Background(), "ns", "sa", &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp}})
	require.NoError(t, err)
	assert.Equal(t, "token-ns-sa-1", resp.Status.Token)
	assert.Equal(t, now.Add(10*time.Minute), resp.Status.ExpirationTimestamp.Time)
	assert.Len(t, tok.Calls(), 1)
}
