package pullrecords

import (
	"slices"
	"time"

	"github.com/kubeletkit/kubeletkit/cri"
)

// PodCredentials are a pod's credentials for an image, as far as the
// records can match them: the pod's image pull secrets whose entries
// match the image (each with the hash of that entry), and the service
// account a credential provider plugin was given a token of for it. The
// node's own credentials are not among them: they are every pod's.
type PodCredentials struct {
	Secrets        []Secret
	ServiceAccount *ServiceAccount
}

// PodCredentialsOf are the pod's credentials among those a pull of the
// image would try (cri.Keyring.LookupTracked): its secrets', and the first
// service account's, as upstream's.
func PodCredentialsOf(auths []cri.TrackedAuth) PodCredentials {
	var pc PodCredentials
	for _, a := range auths {
		switch {
		case a.Secret != nil:
			pc.Secrets = append(pc.Secrets, Secret{Namespace: a.Secret.Namespace, Name: a.Secret.Name, UID: a.Secret.UID, CredentialHash: a.Hash})
		case a.ServiceAccount != nil && pc.ServiceAccount == nil:
			pc.ServiceAccount = &ServiceAccount{Namespace: a.ServiceAccount.Namespace, Name: a.ServiceAccount.Name, UID: a.ServiceAccount.UID}
		}
	}
	return pc
}

// CredentialsOf is what a pull made with used (nil: with no credentials)
// records: the secret or the service account it came from, or, for none
// or the node's own, that every pod on the node may use the image.
func CredentialsOf(used *cri.TrackedAuth) Credentials {
	switch {
	case used == nil:
	case used.Secret != nil:
		return Credentials{Secrets: []Secret{{Namespace: used.Secret.Namespace, Name: used.Secret.Name, UID: used.Secret.UID, CredentialHash: used.Hash}}}
	case used.ServiceAccount != nil:
		return Credentials{ServiceAccounts: []ServiceAccount{{Namespace: used.ServiceAccount.Namespace, Name: used.ServiceAccount.Name, UID: used.ServiceAccount.UID}}}
	}
	return Credentials{NodePodsAccessible: true}
}

// Input is what Decide decides on, for a pod whose container asks for an
// image that is present on the node.
type Input struct {
	// Policy and Allowlist are the node's (Options.Policy, Options.Allowlist).
	Policy    Policy
	Allowlist Allowlist
	// Image is the container's image field, as written.
	Image string
	// Record is the node's record of the image (by the runtime's
	// reference to it); nil when there is none.
	Record *Record
	// Intent says that the node began to pull Image and has no record of
	// the end: it pulled the image itself.
	Intent bool
	// Unreadable says that the record or the intent could not be read: a
	// pod must then show its credentials whatever the policy, as
	// upstream's.
	Unreadable bool
	// Pod are the pod's credentials for the image; nil when not yet looked
	// up (Decide then asks for them only when they matter).
	Pod *PodCredentials
}

// Verdict is what Decide says.
type Verdict int

const (
	// MustPull: the pod's credentials must be verified: the image is
	// pulled again with them, and a pod with pull policy Never fails.
	MustPull Verdict = iota
	// NeedPodCredentials: the decision depends on the pod's credentials:
	// look them up and decide again with Input.Pod.
	NeedPodCredentials
	// PolicyAllows: the policy does not ask for this image's credentials.
	PolicyAllows
	// RecordAllows: the record says the pod may use the image: the node's
	// own credentials, or none, pulled it, or the pod's own (a secret with
	// the same credentials, or the same secret, or the same service
	// account).
	RecordAllows
)

// String names the verdict.
func (v Verdict) String() string {
	switch v {
	case MustPull:
		return "MustPull"
	case NeedPodCredentials:
		return "NeedPodCredentials"
	case PolicyAllows:
		return "PolicyAllows"
	case RecordAllows:
		return "RecordAllows"
	}
	return "Verdict(?)"
}

// Decision is Decide's answer.
type Decision struct {
	Verdict Verdict
	// Remember, with RecordAllows, is a secret of the pod to add to the
	// record (MergeCredentials): it matched a recorded secret by its
	// credentials' hash but is another secret, or is the recorded secret
	// (namespace, name and UID) with other credentials now, as upstream
	// keeps both so that the next check matches at once. Nil: nothing to
	// add.
	Remember *Secret
}

// rememberLimit is how many secrets a record's name may hold for Decide
// still to add one it matched, as upstream's bound on writes in
// namespaces that come and go.
const rememberLimit = 100

// Decide says whether a pod may use an image present on the node without
// a pull, as upstream's image pull manager (MustAttemptImagePull) does: a
// record that cannot be read means a pull; then the policy (a record or an
// intent means the node pulled the image itself); then the record of the
// image's name: none, or one with no credentials, means a pull; one of
// the node's own credentials (NodePodsAccessible) lets every pod; else
// the pod's secrets are matched with the recorded ones (the same
// credentials' hash, or the same secret) and its service account with the
// recorded ones. It is a pure function.
func Decide(in Input) Decision {
	if in.Unreadable {
		return Decision{Verdict: MustPull}
	}
	if !RequiresVerification(in.Policy, in.Allowlist, in.Image, in.Record != nil || in.Intent) {
		return Decision{Verdict: PolicyAllows}
	}
	if in.Record == nil {
		return Decision{Verdict: MustPull}
	}
	name, err := ImageName(in.Image)
	if err != nil {
		return Decision{Verdict: MustPull}
	}
	recorded, ok := in.Record.Credentials[name]
	switch {
	case !ok:
		return Decision{Verdict: MustPull}
	case recorded.NodePodsAccessible:
		return Decision{Verdict: RecordAllows}
	case len(recorded.Secrets) == 0 && len(recorded.ServiceAccounts) == 0:
		return Decision{Verdict: MustPull}
	case in.Pod == nil:
		return Decision{Verdict: NeedPodCredentials}
	}
	remember := len(recorded.Secrets) < rememberLimit
	for _, mine := range in.Pod.Secrets {
		for _, theirs := range recorded.Secrets {
			// A recorded hash is empty when hashing failed: it matches none.
			sameHash := theirs.CredentialHash != "" && mine.CredentialHash == theirs.CredentialHash
			sameSecret := mine.Namespace == theirs.Namespace && mine.Name == theirs.Name && mine.UID == theirs.UID
			switch {
			case sameHash && !sameSecret && remember:
				return Decision{Verdict: RecordAllows, Remember: &mine}
			case sameHash:
				return Decision{Verdict: RecordAllows}
			case sameSecret && remember:
				// The same secret, its content changed since: upstream
				// trusts it, and records the new hash.
				return Decision{Verdict: RecordAllows, Remember: &mine}
			}
		}
	}
	if sa := in.Pod.ServiceAccount; sa != nil && slices.Contains(recorded.ServiceAccounts, *sa) {
		return Decision{Verdict: RecordAllows}
	}
	return Decision{Verdict: MustPull}
}

// MergeCredentials returns the record of imageRef with creds added under
// image's name (ImageName; an image that does not parse changes nothing),
// and whether it changed, as upstream merges a pull's credentials: no
// record yet gives a new one (with nil creds: a record of the image with
// no credentials, which makes every pod show its own); credentials of
// every pod replace any secrets and service accounts and take no more;
// secrets are kept once per namespace, name and UID, a newer hash
// replacing the older; service accounts once each. Empty creds change
// nothing. r is not modified; LastUpdated is now when it changed.
func MergeCredentials(r *Record, imageRef, image string, creds *Credentials, now time.Time) (*Record, bool) {
	name, err := ImageName(image)
	if err != nil {
		return r, false
	}
	if r == nil {
		out := &Record{ImageRef: imageRef, LastUpdated: now, Credentials: map[string]Credentials{}}
		if creds != nil {
			out.Credentials[name] = Credentials{Secrets: slices.Clone(creds.Secrets), ServiceAccounts: slices.Clone(creds.ServiceAccounts), NodePodsAccessible: creds.NodePodsAccessible}
		}
		return out, true
	}
	if creds == nil || creds.empty() {
		return r, false
	}
	cur, found := r.Credentials[name]
	var next Credentials
	switch {
	case !found:
		next = Credentials{Secrets: slices.Clone(creds.Secrets), ServiceAccounts: slices.Clone(creds.ServiceAccounts), NodePodsAccessible: creds.NodePodsAccessible}
	case cur.NodePodsAccessible:
		return r, false
	case creds.NodePodsAccessible:
		next = Credentials{NodePodsAccessible: true}
	case len(creds.Secrets) > 0:
		secrets, changed := mergeSecrets(cur.Secrets, creds.Secrets)
		if !changed {
			return r, false
		}
		next = Credentials{Secrets: secrets, ServiceAccounts: slices.Clone(cur.ServiceAccounts)}
	default:
		accounts, changed := mergeServiceAccounts(cur.ServiceAccounts, creds.ServiceAccounts)
		if !changed {
			return r, false
		}
		next = Credentials{Secrets: slices.Clone(cur.Secrets), ServiceAccounts: accounts}
	}
	out := r.clone()
	if out.Credentials == nil {
		out.Credentials = map[string]Credentials{}
	}
	out.Credentials[name] = next
	out.LastUpdated = now
	return out, true
}

// mergeSecrets adds add to cur, one per namespace, name and UID (add's
// hash winning), sorted; changed says whether anything was added or
// replaced.
func mergeSecrets(cur, add []Secret) ([]Secret, bool) {
	out := slices.Clone(cur)
	changed := false
	for _, s := range add {
		i := slices.IndexFunc(out, func(o Secret) bool { return o.Namespace == s.Namespace && o.Name == s.Name && o.UID == s.UID })
		switch {
		case i < 0:
			out = append(out, s)
			changed = true
		case out[i].CredentialHash != s.CredentialHash:
			out[i].CredentialHash = s.CredentialHash
			changed = true
		}
	}
	if !changed {
		return cur, false
	}
	slices.SortFunc(out, compareSecrets)
	return out, true
}

// mergeServiceAccounts adds add to cur, each once, sorted.
func mergeServiceAccounts(cur, add []ServiceAccount) ([]ServiceAccount, bool) {
	out := slices.Clone(cur)
	changed := false
	for _, sa := range add {
		if !slices.Contains(out, sa) {
			out = append(out, sa)
			changed = true
		}
	}
	if !changed {
		return cur, false
	}
	slices.SortFunc(out, compareServiceAccounts)
	return out, true
}
