package pullrecords

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	sigsjson "sigs.k8s.io/json"
)

// Record is what the node knows of one image it pulled: upstream's
// ImagePulledRecord. It is kept by the image's reference as the runtime
// gave it (its ID), and maps each image name a pod asked for (the
// container's image field without its tag and digest, as written:
// "busybox" and "docker.io/library/busybox" are two names) to the
// credentials that pulled it under that name. A record with no entry for
// a name, or an entry with no credentials, says the node pulled the image
// without knowing with what: every pod must show its own.
type Record struct {
	// ImageRef is the image's reference from the runtime.
	ImageRef string
	// LastUpdated is when the record last changed (whole seconds once
	// read back, as upstream keeps it).
	LastUpdated time.Time
	// Credentials are by image name.
	Credentials map[string]Credentials
}

// Credentials are those that pulled an image under one name: upstream's
// ImagePullCredentials. NodePodsAccessible excludes the others.
type Credentials struct {
	// Secrets are the image pull secrets whose credentials pulled it,
	// sorted by namespace, name and UID.
	Secrets []Secret
	// ServiceAccounts are the service accounts whose tokens a credential
	// provider plugin was given for the credentials that pulled it,
	// sorted likewise.
	ServiceAccounts []ServiceAccount
	// NodePodsAccessible: the image was pulled with no credentials, or
	// with the node's own, so that every pod on the node may use it.
	NodePodsAccessible bool
}

// Secret is an image pull secret: its namespace, name, UID and the hash
// of the credentials in it that pulled an image (cri.TrackedAuth.Hash),
// never the credentials.
type Secret struct {
	Namespace, Name, UID string
	CredentialHash       string
}

// ServiceAccount is a service account a credential provider plugin was
// given a token of.
type ServiceAccount struct {
	Namespace, Name, UID string
}

// empty says whether c records nothing.
func (c Credentials) empty() bool {
	return !c.NodePodsAccessible && len(c.Secrets) == 0 && len(c.ServiceAccounts) == 0
}

// The files' API: upstream's kubelet.config.k8s.io, v1beta1 written, and
// v1alpha1 (the same fields) read as well.
const (
	apiGroup       = "kubelet.config.k8s.io"
	apiVersion     = apiGroup + "/v1beta1"
	apiVersionOld  = apiGroup + "/v1alpha1"
	kindIntent     = "ImagePullIntent"
	kindRecord     = "ImagePulledRecord"
	maxRecordBytes = 4 << 20
)

// ErrMalformed is wrapped by the errors of ParseRecord and ParseIntent.
var ErrMalformed = errors.New("malformed pull record")

// The JSON of upstream's types, field for field.
type (
	typeMeta struct {
		Kind       string `json:"kind,omitempty"`
		APIVersion string `json:"apiVersion,omitempty"`
	}
	intentJSON struct {
		typeMeta `json:",inline"`
		Image    string `json:"image"`
	}
	recordJSON struct {
		typeMeta          `json:",inline"`
		LastUpdatedTime   *string                    `json:"lastUpdatedTime"`
		ImageRef          string                     `json:"imageRef"`
		CredentialMapping map[string]credentialsJSON `json:"credentialMapping,omitempty"`
	}
	credentialsJSON struct {
		KubernetesSecrets         []secretJSON         `json:"kubernetesSecrets,omitempty"`
		KubernetesServiceAccounts []serviceAccountJSON `json:"kubernetesServiceAccounts,omitempty"`
		NodePodsAccessible        bool                 `json:"nodePodsAccessible,omitempty"`
	}
	secretJSON struct {
		UID            string `json:"uid"`
		Namespace      string `json:"namespace"`
		Name           string `json:"name"`
		CredentialHash string `json:"credentialHash"`
	}
	serviceAccountJSON struct {
		UID       string `json:"uid"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	}
)

// MarshalRecord encodes r as upstream's kubelet writes an
// ImagePulledRecord file (kubelet.config.k8s.io/v1beta1 JSON, one line):
// a node can go from upstream kubelet to kubeletkit, or back, and keep
// its records.
func MarshalRecord(r *Record) ([]byte, error) {
	out := recordJSON{typeMeta: typeMeta{Kind: kindRecord, APIVersion: apiVersion}, ImageRef: r.ImageRef}
	if !r.LastUpdated.IsZero() {
		t := r.LastUpdated.UTC().Format(time.RFC3339)
		out.LastUpdatedTime = &t
	}
	if len(r.Credentials) > 0 {
		out.CredentialMapping = make(map[string]credentialsJSON, len(r.Credentials))
		for name, c := range r.Credentials {
			cj := credentialsJSON{NodePodsAccessible: c.NodePodsAccessible}
			for _, s := range c.Secrets {
				cj.KubernetesSecrets = append(cj.KubernetesSecrets, secretJSON{UID: s.UID, Namespace: s.Namespace, Name: s.Name, CredentialHash: s.CredentialHash})
			}
			for _, sa := range c.ServiceAccounts {
				cj.KubernetesServiceAccounts = append(cj.KubernetesServiceAccounts, serviceAccountJSON{UID: sa.UID, Namespace: sa.Namespace, Name: sa.Name})
			}
			out.CredentialMapping[name] = cj
		}
	}
	return marshal(out)
}

// MarshalIntent encodes the intent to pull image as upstream's kubelet
// writes an ImagePullIntent file.
func MarshalIntent(image string) ([]byte, error) {
	return marshal(intentJSON{typeMeta: typeMeta{Kind: kindIntent, APIVersion: apiVersion}, Image: image})
}

func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	// As upstream's serializer: encoding/json's encoder, a newline after.
	if err := json.NewEncoder(&b).Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ParseRecord decodes an ImagePulledRecord file strictly, as upstream's
// kubelet does: kind and apiVersion (v1beta1 or v1alpha1) checked, field
// names case-sensitive, an unknown or duplicated field an error. Its
// errors wrap ErrMalformed; old says the file is v1alpha1, which Open
// rewrites as v1beta1. The credentials of each name come sorted.
func ParseRecord(b []byte) (r *Record, old bool, err error) {
	var in recordJSON
	old, err = parse(b, kindRecord, &in)
	if err != nil {
		return nil, false, err
	}
	r = &Record{ImageRef: in.ImageRef}
	if in.LastUpdatedTime != nil {
		if r.LastUpdated, err = time.Parse(time.RFC3339, *in.LastUpdatedTime); err != nil {
			return nil, false, fmt.Errorf("%w: lastUpdatedTime: %w", ErrMalformed, err)
		}
	}
	if len(in.CredentialMapping) > 0 {
		r.Credentials = make(map[string]Credentials, len(in.CredentialMapping))
		for name, cj := range in.CredentialMapping {
			c := Credentials{NodePodsAccessible: cj.NodePodsAccessible}
			for _, s := range cj.KubernetesSecrets {
				c.Secrets = append(c.Secrets, Secret{UID: s.UID, Namespace: s.Namespace, Name: s.Name, CredentialHash: s.CredentialHash})
			}
			for _, sa := range cj.KubernetesServiceAccounts {
				c.ServiceAccounts = append(c.ServiceAccounts, ServiceAccount{UID: sa.UID, Namespace: sa.Namespace, Name: sa.Name})
			}
			slices.SortFunc(c.Secrets, compareSecrets)
			slices.SortFunc(c.ServiceAccounts, compareServiceAccounts)
			r.Credentials[name] = c
		}
	}
	return r, old, nil
}

// ParseIntent decodes an ImagePullIntent file as ParseRecord does, and
// returns its image.
func ParseIntent(b []byte) (image string, old bool, err error) {
	var in intentJSON
	old, err = parse(b, kindIntent, &in)
	if err != nil {
		return "", false, err
	}
	return in.Image, old, nil
}

// parse decodes b strictly into v, checking its kind and version.
func parse(b []byte, kind string, v any) (old bool, err error) {
	if len(b) > maxRecordBytes {
		return false, fmt.Errorf("%w: %d bytes", ErrMalformed, len(b))
	}
	var tm typeMeta
	if err := json.Unmarshal(b, &tm); err != nil {
		return false, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	switch {
	case tm.Kind != kind:
		return false, fmt.Errorf("%w: kind %q, not %q", ErrMalformed, tm.Kind, kind)
	case tm.APIVersion == apiVersionOld:
		old = true
	case tm.APIVersion != apiVersion:
		return false, fmt.Errorf("%w: apiVersion %q", ErrMalformed, tm.APIVersion)
	}
	strict, err := sigsjson.UnmarshalStrict(b, v)
	if err != nil {
		return false, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if len(strict) > 0 {
		return false, fmt.Errorf("%w: %w", ErrMalformed, errors.Join(strict...))
	}
	return old, nil
}

func compareSecrets(a, b Secret) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name), strings.Compare(a.UID, b.UID))
}

func compareServiceAccounts(a, b ServiceAccount) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name), strings.Compare(a.UID, b.UID))
}

// clone returns a deep copy of r.
func (r *Record) clone() *Record {
	out := &Record{ImageRef: r.ImageRef, LastUpdated: r.LastUpdated}
	if r.Credentials != nil {
		out.Credentials = make(map[string]Credentials, len(r.Credentials))
		for _, name := range slices.Sorted(maps.Keys(r.Credentials)) {
			c := r.Credentials[name]
			out.Credentials[name] = Credentials{Secrets: slices.Clone(c.Secrets), ServiceAccounts: slices.Clone(c.ServiceAccounts), NodePodsAccessible: c.NodePodsAccessible}
		}
	}
	return out
}
