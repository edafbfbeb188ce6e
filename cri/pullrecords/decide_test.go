package pullrecords_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
)

var (
	s1      = pullrecords.Secret{Namespace: "default", Name: "pull-secret", UID: "uid-1", CredentialHash: "hash-1"}
	s1Other = pullrecords.Secret{Namespace: "other", Name: "pull-secret", UID: "uid-9", CredentialHash: "hash-1"}   // same credentials, another secret
	s1New   = pullrecords.Secret{Namespace: "default", Name: "pull-secret", UID: "uid-1", CredentialHash: "hash-2"} // the same secret, new content
	s2      = pullrecords.Secret{Namespace: "default", Name: "pull-secret", UID: "uid-2", CredentialHash: "hash-3"} // same name, recreated
	sa      = pullrecords.ServiceAccount{Namespace: "default", Name: "builder", UID: "sa-uid"}
)

func record(name string, c pullrecords.Credentials) *pullrecords.Record {
	return &pullrecords.Record{ImageRef: "sha256:abc", Credentials: map[string]pullrecords.Credentials{name: c}}
}

func pod(secrets []pullrecords.Secret, account *pullrecords.ServiceAccount) *pullrecords.PodCredentials {
	return &pullrecords.PodCredentials{Secrets: secrets, ServiceAccount: account}
}

// Decide's cases, upstream's (TestFileBasedImagePullManager_MustAttemptImagePull
// and the policies' tests) among them.
func TestDecide(t *testing.T) {
	const image = "docker.io/testing/test:latest"
	withS1 := record("docker.io/testing/test", pullrecords.Credentials{Secrets: []pullrecords.Secret{s1}})
	brokenHash := record("docker.io/testing/test", pullrecords.Credentials{Secrets: []pullrecords.Secret{{Namespace: "default", Name: "pull-secret", UID: "uid-1"}}})
	withSA := record("docker.io/testing/test", pullrecords.Credentials{ServiceAccounts: []pullrecords.ServiceAccount{sa}})
	nodeWide := record("docker.io/testing/test", pullrecords.Credentials{NodePodsAccessible: true})
	for _, tc := range []struct {
		name     string
		in       pullrecords.Input
		want     pullrecords.Verdict
		remember *pullrecords.Secret
	}{
		{name: "recorded with the pod's exact secret",
			in: pullrecords.Input{Record: withS1, Pod: pod([]pullrecords.Secret{s1}, nil)}, want: pullrecords.RecordAllows},
		{name: "recorded with a secret, the pod has none",
			in: pullrecords.Input{Record: withS1, Pod: pod(nil, nil)}, want: pullrecords.MustPull},
		{name: "recorded with a secret, the pod's not looked up yet",
			in: pullrecords.Input{Record: withS1}, want: pullrecords.NeedPodCredentials},
		{name: "the same secret with new content: trusted, the new hash remembered",
			in: pullrecords.Input{Record: withS1, Pod: pod([]pullrecords.Secret{s1New}, nil)}, want: pullrecords.RecordAllows, remember: &s1New},
		{name: "another secret of the same name (another UID) and other content",
			in: pullrecords.Input{Record: withS1, Pod: pod([]pullrecords.Secret{s2}, nil)}, want: pullrecords.MustPull},
		{name: "another secret with the same content: allowed, remembered",
			in: pullrecords.Input{Record: withS1, Pod: pod([]pullrecords.Secret{s1Other}, nil)}, want: pullrecords.RecordAllows, remember: &s1Other},
		{name: "the secret recorded under another image name",
			in:   pullrecords.Input{Image: "docker.io/testing/other:1", Record: record("docker.io/testing/test", pullrecords.Credentials{Secrets: []pullrecords.Secret{s1}}), Pod: pod([]pullrecords.Secret{s1}, nil)},
			want: pullrecords.MustPull},
		{name: "names are as written: busybox is not docker.io/library/busybox",
			in:   pullrecords.Input{Image: "busybox:1.36", Record: record("docker.io/library/busybox", pullrecords.Credentials{NodePodsAccessible: true})},
			want: pullrecords.MustPull},
		{name: "the tag and digest do not count",
			in:   pullrecords.Input{Image: "docker.io/testing/test:2@sha256:" + hex64, Record: withS1, Pod: pod([]pullrecords.Secret{s1}, nil)},
			want: pullrecords.RecordAllows},
		{name: "recorded with no credentials",
			in: pullrecords.Input{Record: &pullrecords.Record{ImageRef: "sha256:abc"}, Pod: pod([]pullrecords.Secret{s1}, nil)}, want: pullrecords.MustPull},
		{name: "recorded with an empty entry",
			in: pullrecords.Input{Record: record("docker.io/testing/test", pullrecords.Credentials{}), Pod: pod([]pullrecords.Secret{s1}, nil)}, want: pullrecords.MustPull},
		{name: "no record of a preloaded image",
			in: pullrecords.Input{}, want: pullrecords.PolicyAllows},
		{name: "no record of a preloaded image, AlwaysVerify",
			in: pullrecords.Input{Policy: pullrecords.AlwaysVerify}, want: pullrecords.MustPull},
		{name: "only an intent: pulled by the node, no record of what with",
			in: pullrecords.Input{Intent: true, Pod: pod([]pullrecords.Secret{s1}, nil)}, want: pullrecords.MustPull},
		{name: "only an intent, NeverVerify",
			in: pullrecords.Input{Policy: pullrecords.NeverVerify, Intent: true}, want: pullrecords.PolicyAllows},
		{name: "recorded with a secret, NeverVerify",
			in: pullrecords.Input{Policy: pullrecords.NeverVerify, Record: withS1, Pod: pod(nil, nil)}, want: pullrecords.PolicyAllows},
		{name: "a record that cannot be read, even under NeverVerify",
			in: pullrecords.Input{Policy: pullrecords.NeverVerify, Unreadable: true}, want: pullrecords.MustPull},
		{name: "node-accessible, the pod has no secrets",
			in: pullrecords.Input{Record: nodeWide}, want: pullrecords.RecordAllows},
		{name: "node-accessible, the pod has secrets",
			in: pullrecords.Input{Record: nodeWide, Pod: pod([]pullrecords.Secret{s2}, nil)}, want: pullrecords.RecordAllows},
		{name: "a recorded hash that failed matches no other secret's failed hash",
			in:   pullrecords.Input{Record: brokenHash, Pod: pod([]pullrecords.Secret{{Namespace: "differentns", Name: "pull-secret", UID: "uid-1"}}, nil)},
			want: pullrecords.MustPull},
		{name: "a recorded hash that failed, the same secret",
			in:   pullrecords.Input{Record: brokenHash, Pod: pod([]pullrecords.Secret{{Namespace: "default", Name: "pull-secret", UID: "uid-1"}}, nil)},
			want: pullrecords.RecordAllows, remember: &pullrecords.Secret{Namespace: "default", Name: "pull-secret", UID: "uid-1"}},
		{name: "the pod's exact service account",
			in: pullrecords.Input{Record: withSA, Pod: pod(nil, &sa)}, want: pullrecords.RecordAllows},
		{name: "recorded with a service account, the pod has none",
			in: pullrecords.Input{Record: withSA, Pod: pod(nil, nil)}, want: pullrecords.MustPull},
		{name: "a service account of another UID",
			in: pullrecords.Input{Record: withSA, Pod: pod(nil, &pullrecords.ServiceAccount{Namespace: "default", Name: "builder", UID: "other"})}, want: pullrecords.MustPull},
		{name: "a service account of another namespace",
			in: pullrecords.Input{Record: withSA, Pod: pod(nil, &pullrecords.ServiceAccount{Namespace: "other", Name: "builder", UID: "sa-uid"})}, want: pullrecords.MustPull},
		{name: "node-accessible, the pod has a service account",
			in: pullrecords.Input{Record: nodeWide, Pod: pod(nil, &sa)}, want: pullrecords.RecordAllows},
		{name: "allowlisted",
			in:   pullrecords.Input{Policy: pullrecords.NeverVerifyAllowlistedImages, Allowlist: mustAllow(t, "docker.io/testing/*"), Record: withS1, Pod: pod(nil, nil)},
			want: pullrecords.PolicyAllows},
		{name: "not allowlisted, preloaded",
			in:   pullrecords.Input{Policy: pullrecords.NeverVerifyAllowlistedImages, Allowlist: mustAllow(t, "docker.io/other/*")},
			want: pullrecords.MustPull},
		{name: "an image name that does not parse",
			in: pullrecords.Input{Image: "Docker.io/Testing/Test", Record: withS1, Pod: pod([]pullrecords.Secret{s1}, nil)}, want: pullrecords.MustPull},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			if in.Policy == "" {
				in.Policy = pullrecords.DefaultPolicy
			}
			if in.Image == "" {
				in.Image = image
			}
			d := pullrecords.Decide(in)
			assert.Equal(t, tc.want, d.Verdict)
			assert.Equal(t, tc.remember, d.Remember)
		})
	}
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func mustAllow(t *testing.T, patterns ...string) pullrecords.Allowlist {
	t.Helper()
	a, err := pullrecords.ParseAllowlist(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A record's secrets are not remembered past upstream's bound of 100.
func TestDecideRemembersUpToALimit(t *testing.T) {
	var many []pullrecords.Secret
	for i := range 100 {
		many = append(many, pullrecords.Secret{Namespace: "ns", Name: "s", UID: string(rune('a'+i%26)) + string(rune('a'+i/26)), CredentialHash: "h"})
	}
	in := pullrecords.Input{Policy: pullrecords.AlwaysVerify, Image: "app", Record: record("app", pullrecords.Credentials{Secrets: many}),
		Pod: pod([]pullrecords.Secret{{Namespace: "other", Name: "s", UID: "x", CredentialHash: "h"}}, nil)}
	d := pullrecords.Decide(in)
	assert.Equal(t, pullrecords.RecordAllows, d.Verdict, "the same credentials still match")
	assert.Nil(t, d.Remember, "but are not added")
	in.Pod.Secrets[0] = pullrecords.Secret{Namespace: "ns", Name: "s", UID: "aa", CredentialHash: "new"}
	assert.Equal(t, pullrecords.MustPull, pullrecords.Decide(in).Verdict, "past the bound, the same secret with new content is not trusted")
}

func TestMergeCredentials(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	before := now.Add(-time.Hour)
	existing := func(c pullrecords.Credentials) *pullrecords.Record {
		return &pullrecords.Record{ImageRef: "ref", LastUpdated: before, Credentials: map[string]pullrecords.Credentials{"app": c}}
	}
	secrets := func(s ...pullrecords.Secret) pullrecords.Credentials { return pullrecords.Credentials{Secrets: s} }
	accounts := func(s ...pullrecords.ServiceAccount) pullrecords.Credentials {
		return pullrecords.Credentials{ServiceAccounts: s}
	}
	sa2 := pullrecords.ServiceAccount{Namespace: "a", Name: "first", UID: "1"}
	for _, tc := range []struct {
		name    string
		r       *pullrecords.Record
		creds   *pullrecords.Credentials
		want    map[string]pullrecords.Credentials
		changed bool
	}{
		{"a new record", nil, &pullrecords.Credentials{Secrets: []pullrecords.Secret{s1}}, map[string]pullrecords.Credentials{"app": secrets(s1)}, true},
		{"a new record of unknown credentials", nil, nil, map[string]pullrecords.Credentials{}, true},
		{"a secret added, sorted", existing(secrets(s1)), &pullrecords.Credentials{Secrets: []pullrecords.Secret{s1Other, s2}},
			map[string]pullrecords.Credentials{"app": secrets(s1, s2, s1Other)}, true},
		{"the same secret's new hash replaces the old", existing(secrets(s1)), &pullrecords.Credentials{Secrets: []pullrecords.Secret{s1New}},
			map[string]pullrecords.Credentials{"app": secrets(s1New)}, true},
		{"the same secret again", existing(secrets(s1)), &pullrecords.Credentials{Secrets: []pullrecords.Secret{s1}}, map[string]pullrecords.Credentials{"app": secrets(s1)}, false},
		{"node-accessible replaces secrets and service accounts", existing(pullrecords.Credentials{Secrets: []pullrecords.Secret{s1}, ServiceAccounts: []pullrecords.ServiceAccount{sa}}),
			&pullrecords.Credentials{NodePodsAccessible: true}, map[string]pullrecords.Credentials{"app": {NodePodsAccessible: true}}, true},
		{"node-accessible takes no more", existing(pullrecords.Credentials{NodePodsAccessible: true}), &pullrecords.Credentials{Secrets: []pullrecords.Secret{s1}},
			map[string]pullrecords.Credentials{"app": {NodePodsAccessible: true}}, false},
		{"a service account added to secrets", existing(secrets(s1)), &pullrecords.Credentials{ServiceAccounts: []pullrecords.ServiceAccount{sa}},
			map[string]pullrecords.Credentials{"app": {Secrets: []pullrecords.Secret{s1}, ServiceAccounts: []pullrecords.ServiceAccount{sa}}}, true},
		{"service accounts sorted, once each", existing(accounts(sa)), &pullrecords.Credentials{ServiceAccounts: []pullrecords.ServiceAccount{sa, sa2}},
			map[string]pullrecords.Credentials{"app": accounts(sa2, sa)}, true},
		{"the same service account again", existing(accounts(sa)), &pullrecords.Credentials{ServiceAccounts: []pullrecords.ServiceAccount{sa}}, map[string]pullrecords.Credentials{"app": accounts(sa)}, false},
		{"empty credentials change nothing", existing(secrets(s1)), &pullrecords.Credentials{}, map[string]pullrecords.Credentials{"app": secrets(s1)}, false},
		{"nil credentials change nothing", existing(secrets(s1)), nil, map[string]pullrecords.Credentials{"app": secrets(s1)}, false},
		{"a second name", &pullrecords.Record{ImageRef: "ref", Credentials: map[string]pullrecords.Credentials{"docker.io/library/app": {NodePodsAccessible: true}}},
			&pullrecords.Credentials{Secrets: []pullrecords.Secret{s1}},
			map[string]pullrecords.Credentials{"docker.io/library/app": {NodePodsAccessible: true}, "app": secrets(s1)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var orig *pullrecords.Record
			if tc.r != nil {
				orig = &pullrecords.Record{ImageRef: tc.r.ImageRef, LastUpdated: tc.r.LastUpdated, Credentials: map[string]pullrecords.Credentials{}}
				for k, v := range tc.r.Credentials {
					orig.Credentials[k] = v
				}
			}
			got, changed := pullrecords.MergeCredentials(tc.r, "ref", "app:v1", tc.creds, now)
			assert.Equal(t, tc.changed, changed)
			assert.Equal(t, tc.want, got.Credentials)
			assert.Equal(t, "ref", got.ImageRef)
			if changed {
				assert.Equal(t, now, got.LastUpdated)
			} else {
				assert.Equal(t, before, got.LastUpdated)
			}
			if tc.r != nil {
				assert.Equal(t, orig, tc.r, "the record given is not modified")
			}
		})
	}
}

func TestCredentialsOf(t *testing.T) {
	auth := &runtimeapi.AuthConfig{Username: "u", Password: "p"}
	assert.Equal(t, pullrecords.Credentials{NodePodsAccessible: true}, pullrecords.CredentialsOf(nil), "no credentials")
	assert.Equal(t, pullrecords.Credentials{NodePodsAccessible: true}, pullrecords.CredentialsOf(&cri.TrackedAuth{Auth: auth}), "the node's own")
	assert.Equal(t, pullrecords.Credentials{Secrets: []pullrecords.Secret{{Namespace: "ns", Name: "s", UID: "u1", CredentialHash: "h"}}},
		pullrecords.CredentialsOf(&cri.TrackedAuth{Auth: auth, Secret: &cri.ObjectID{Namespace: "ns", Name: "s", UID: "u1"}, Hash: "h"}))
	assert.Equal(t, pullrecords.Credentials{ServiceAccounts: []pullrecords.ServiceAccount{{Namespace: "ns", Name: "sa", UID: "u2"}}},
		pullrecords.CredentialsOf(&cri.TrackedAuth{Auth: auth, ServiceAccount: &cri.ObjectID{Namespace: "ns", Name: "sa", UID: "u2"}}))
}

func TestPodCredentialsOf(t *testing.T) {
	auth := &runtimeapi.AuthConfig{Username: "u", Password: "p"}
	got := pullrecords.PodCredentialsOf([]cri.TrackedAuth{
		{Auth: auth, Secret: &cri.ObjectID{Namespace: "ns", Name: "a", UID: "1"}, Hash: "ha"},
		{Auth: auth}, // the node's: every pod's, not matched
		{Auth: auth, ServiceAccount: &cri.ObjectID{Namespace: "ns", Name: "first", UID: "2"}},
		{Auth: auth, Secret: &cri.ObjectID{Namespace: "ns", Name: "b", UID: "3"}, Hash: "hb"},
		{Auth: auth, ServiceAccount: &cri.ObjectID{Namespace: "ns", Name: "second", UID: "4"}},
	})
	assert.Equal(t, pullrecords.PodCredentials{
		Secrets:        []pullrecords.Secret{{Namespace: "ns", Name: "a", UID: "1", CredentialHash: "ha"}, {Namespace: "ns", Name: "b", UID: "3", CredentialHash: "hb"}},
		ServiceAccount: &pullrecords.ServiceAccount{Namespace: "ns", Name: "first", UID: "2"},
	}, got, "the secrets, and the first service account, as upstream's")
}
