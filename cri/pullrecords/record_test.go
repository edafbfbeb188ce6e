package pullrecords_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
)

const upstreamRef = "sha256:1111111111111111111111111111111111111111111111111111111111111111"

// The files of testdata/upstream are as upstream's kubelet writes them
// (kubelet.config.k8s.io/v1beta1, and v1alpha1 from 1.33): read as they
// are, and a record written back is byte for byte upstream's file.
func TestRecordsInUpstreamFormat(t *testing.T) {
	name := filepath.Join("testdata", "upstream", "pulled", "sha256-"+sha256Hex(upstreamRef))
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	r, old, err := pullrecords.ParseRecord(b)
	require.NoError(t, err)
	assert.False(t, old)
	assert.Equal(t, &pullrecords.Record{
		ImageRef:    upstreamRef,
		LastUpdated: time.Date(2025, 10, 21, 12, 26, 40, 0, time.UTC),
		Credentials: map[string]pullrecords.Credentials{"private.registry.example/team/app": {Secrets: []pullrecords.Secret{{
			Namespace: "team-a", Name: "regcred", UID: "8a1c7d2e-0001", CredentialHash: "2f7c6e0b8f2a9c0d7f4a1e3b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b3c4d"}}}},
	}, r)
	out, err := pullrecords.MarshalRecord(r)
	require.NoError(t, err)
	assert.Equal(t, string(b), string(out))

	intent := filepath.Join("testdata", "upstream", "pulling", "sha256-"+sha256Hex("private.registry.example/team/app:2"))
	b, err = os.ReadFile(intent)
	require.NoError(t, err)
	image, old, err := pullrecords.ParseIntent(b)
	require.NoError(t, err)
	assert.False(t, old)
	assert.Equal(t, "private.registry.example/team/app:2", image)
	out, err = pullrecords.MarshalIntent(image)
	require.NoError(t, err)
	assert.Equal(t, string(b), string(out))
}

func TestParseRecordIsStrict(t *testing.T) {
	const head = `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","imageRef":"x"`
	for _, tc := range []struct{ name, in, err string }{
		{"not JSON", `{`, "unexpected end of JSON input"},
		{"another kind", `{"kind":"ImagePullIntent","apiVersion":"kubelet.config.k8s.io/v1beta1"}`, `kind "ImagePullIntent", not "ImagePulledRecord"`},
		{"no kind", `{"apiVersion":"kubelet.config.k8s.io/v1beta1"}`, `kind "", not "ImagePulledRecord"`},
		{"another version", `{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1"}`, `apiVersion "kubelet.config.k8s.io/v1"`},
		{"an unknown field", head + `,"credentials":{}}`, `unknown field "credentials"`},
		{"a field in another case", head + `,"ImageRef":"y"}`, `unknown field "ImageRef"`},
		{"a duplicate field", head + `,"imageRef":"y"}`, `duplicate field "imageRef"`},
		{"an unknown field in a secret", head + `,"credentialMapping":{"a":{"kubernetesSecrets":[{"uid":"u","token":"t"}]}}}`, `unknown field "credentialMapping.a.kubernetesSecrets[0].token"`},
		{"a bad time", head + `,"lastUpdatedTime":"yesterday"}`, `lastUpdatedTime`},
	} {
		_, _, err := pullrecords.ParseRecord([]byte(tc.in))
		if assert.Error(t, err, tc.name) {
			assert.ErrorIs(t, err, pullrecords.ErrMalformed, tc.name)
			assert.Contains(t, err.Error(), tc.err, tc.name)
		}
	}
	r, old, err := pullrecords.ParseRecord([]byte(`{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1alpha1","lastUpdatedTime":null,"imageRef":"x"}`))
	require.NoError(t, err)
	assert.True(t, old)
	assert.Equal(t, &pullrecords.Record{ImageRef: "x"}, r)
}

func TestRecordRoundTrip(t *testing.T) {
	r := &pullrecords.Record{
		ImageRef:    "sha256:" + hex64,
		LastUpdated: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		Credentials: map[string]pullrecords.Credentials{
			"app":                  {NodePodsAccessible: true},
			"registry.example/x":   {Secrets: []pullrecords.Secret{s1, s2}, ServiceAccounts: []pullrecords.ServiceAccount{sa}},
			"registry.example/<&>": {},
		},
	}
	b, err := pullrecords.MarshalRecord(r)
	require.NoError(t, err)
	got, _, err := pullrecords.ParseRecord(b)
	require.NoError(t, err)
	assert.Equal(t, r, got)
}

// FuzzParseRecord: any input either fails with ErrMalformed or parses into
// a record that writes back to one that parses to the same.
func FuzzParseRecord(f *testing.F) {
	for _, dir := range []string{"pulled", "pulling"} {
		entries, _ := os.ReadDir(filepath.Join("testdata", "upstream", dir))
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join("testdata", "upstream", dir, e.Name()))
			if err == nil {
				f.Add(b)
			}
		}
	}
	f.Add([]byte(`{"kind":"ImagePulledRecord","apiVersion":"kubelet.config.k8s.io/v1beta1","lastUpdatedTime":"2024-01-01T00:00:00+02:00","imageRef":"r","credentialMapping":{"a":{}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if image, _, err := pullrecords.ParseIntent(b); err == nil {
			out, err := pullrecords.MarshalIntent(image)
			require.NoError(t, err)
			again, old, err := pullrecords.ParseIntent(out)
			require.NoError(t, err)
			assert.False(t, old)
			assert.Equal(t, image, again)
		} else if !errors.Is(err, pullrecords.ErrMalformed) {
			t.Fatalf("ParseIntent: %v does not wrap ErrMalformed", err)
		}
		r, _, err := pullrecords.ParseRecord(b)
		if err != nil {
			if !errors.Is(err, pullrecords.ErrMalformed) {
				t.Fatalf("ParseRecord: %v does not wrap ErrMalformed", err)
			}
			return
		}
		out, err := pullrecords.MarshalRecord(r)
		require.NoError(t, err)
		again, old, err := pullrecords.ParseRecord(out)
		require.NoError(t, err, "%s", out)
		assert.False(t, old)
		// Time is kept in whole seconds, in UTC.
		want := *r
		want.LastUpdated = r.LastUpdated.UTC().Truncate(time.Second)
		if r.LastUpdated.IsZero() {
			want.LastUpdated = time.Time{}
		}
		assert.True(t, want.LastUpdated.Equal(again.LastUpdated), "%v != %v", want.LastUpdated, again.LastUpdated)
		want.LastUpdated, again.LastUpdated = time.Time{}, time.Time{}
		for name, c := range want.Credentials {
			// An empty list reads back as none.
			if len(c.Secrets) == 0 {
				c.Secrets = nil
			}
			if len(c.ServiceAccounts) == 0 {
				c.ServiceAccounts = nil
			}
			want.Credentials[name] = c
		}
		if len(want.Credentials) == 0 {
			want.Credentials = nil
		}
		assert.Equal(t, &want, again)
		assert.False(t, strings.Contains(string(out), "\n\n"))
	})
}
