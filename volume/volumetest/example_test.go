package volumetest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"

	"github.com/kubeletkit/kubeletkit/volume"
	"github.com/kubeletkit/kubeletkit/volume/volumetest"
)

// The fake Mounter records a memory-backed emptyDir's tmpfs mount without
// mounting anything, answers IsMountPoint from its record, and fails on
// demand.
func ExampleMounter() {
	m := &volumetest.Mounter{}
	var mounter volume.Mounter = m
	target := "/var/lib/kubelet/pods/uid-web/volumes/kubernetes.io~empty-dir/cache"

	if err := mounter.Mount("tmpfs", target, "tmpfs", []string{"size=67108864"}); err != nil {
		panic(err)
	}
	mounted, err := mounter.IsMountPoint(target)
	if err != nil {
		panic(err)
	}
	fmt.Println("mounted:", mounted, len(m.Mounted()))

	m.SetUnmountErr(errors.New("device busy"))
	fmt.Println("unmount:", mounter.Unmount(target))
	m.SetUnmountErr(nil)
	fmt.Println("unmount:", mounter.Unmount(target))

	for _, c := range m.Calls() {
		fmt.Printf("%s %q %v\n", c.Op, c.FSType, c.Options)
	}
	// Output:
	// mounted: true 1
	// unmount: device busy
	// unmount: <nil>
	// mount "tmpfs" [size=67108864]
	// unmount "" []
	// unmount "" []
}

// The fake Tokens issues numbered service account tokens that expire
// relative to a fixed clock, for tests of projected serviceAccountToken
// volumes.
func ExampleTokens() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tokens := &volumetest.Tokens{Now: func() time.Time { return now }}
	var source volume.TokenSource = tokens

	exp := int64(600)
	for range 2 {
		resp, err := source.GetServiceAccountToken(context.Background(), "default", "web",
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"api"}, ExpirationSeconds: &exp}})
		if err != nil {
			panic(err)
		}
		fmt.Println(resp.Status.Token, resp.Status.ExpirationTimestamp.UTC().Format(time.RFC3339))
	}
	calls := tokens.Calls()
	fmt.Println("requests:", len(calls), calls[0].Namespace, calls[0].Name, calls[0].Request.Spec.Audiences)
	// Output:
	// token-default-web-1 2026-01-01T00:10:00Z
	// token-default-web-2 2026-01-01T00:10:00Z
	// requests: 2 default web [api]
}
