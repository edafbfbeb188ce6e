package pullrecords_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubeletkit/kubeletkit/cri/pullrecords"
)

// Decide on its own: a record says which credentials pulled the image, and
// the pod's are asked for only when they matter.
func ExampleDecide() {
	regcred := pullrecords.Secret{Namespace: "team-a", Name: "regcred", UID: "1", CredentialHash: "3f…"}
	in := pullrecords.Input{
		Policy: pullrecords.NeverVerifyPreloadedImages,
		Image:  "registry.example/team/app:1",
		Record: &pullrecords.Record{ImageRef: "sha256:…", Credentials: map[string]pullrecords.Credentials{
			"registry.example/team/app": {Secrets: []pullrecords.Secret{regcred}},
		}},
	}
	fmt.Println(pullrecords.Decide(in).Verdict)
	in.Pod = &pullrecords.PodCredentials{} // a pod of team-b, without the secret
	fmt.Println(pullrecords.Decide(in).Verdict)
	in.Pod = &pullrecords.PodCredentials{Secrets: []pullrecords.Secret{regcred}}
	fmt.Println(pullrecords.Decide(in).Verdict)
	in.Policy = pullrecords.NeverVerify
	in.Pod = &pullrecords.PodCredentials{}
	fmt.Println(pullrecords.Decide(in).Verdict)
	// Output:
	// NeedPodCredentials
	// MustPull
	// RecordAllows
	// PolicyAllows
}

// A Manager as a puller drives it: an intent before the pull, the
// credentials that worked after it, and MustPull when the image is there.
func ExampleManager() {
	root, _ := os.MkdirTemp("", "node")
	defer os.RemoveAll(root)
	m, _ := pullrecords.New(pullrecords.Options{Dir: filepath.Join(root, pullrecords.DirName)})
	_ = m.Open(context.Background(), images(nil))

	const image, ref = "registry.example/team/app:1", "sha256:0123"
	regcred := pullrecords.Secret{Namespace: "team-a", Name: "regcred", UID: "1", CredentialHash: "3f…"}
	_ = m.RecordIntent(image)
	// ... the pull, with regcred's credentials, succeeds ...
	m.RecordPulled(image, ref, pullrecords.Credentials{Secrets: []pullrecords.Secret{regcred}})

	teamB := func() (pullrecords.PodCredentials, error) { return pullrecords.PodCredentials{}, nil }
	must, _ := m.MustPull(context.Background(), image, ref, teamB)
	fmt.Println("team-b must pull:", must)
	teamA := func() (pullrecords.PodCredentials, error) {
		return pullrecords.PodCredentials{Secrets: []pullrecords.Secret{regcred}}, nil
	}
	must, _ = m.MustPull(context.Background(), image, ref, teamA)
	fmt.Println("team-a must pull:", must)
	// Output:
	// team-b must pull: true
	// team-a must pull: false
}
