package podsync

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// EventFailedToRetrieveImagePullSecret: some of a pod's imagePullSecrets
// could not be read; the pull goes on without them.
const EventFailedToRetrieveImagePullSecret = "FailedToRetrieveImagePullSecret"

// PullAuths returns the credentials to try, in order, when pulling image
// with the given pull secrets (kubernetes.io/dockerconfigjson and
// kubernetes.io/dockercfg secrets; others are ignored), as upstream's
// keyring picks them: every registry entry whose host (a glob per
// dot-separated label, port included) and path prefix match the image's
// repository, the most specific first, and for an image of Docker Hub the
// index.docker.io entry when nothing else matched. None means the pull
// goes without credentials. A secret that cannot be parsed is an error
// naming it (never its content).
func PullAuths(secrets []*v1.Secret, image string) ([]*runtimeapi.AuthConfig, error) {
	tracked, err := TrackedPullAuths(secrets, image)
	if err != nil || len(tracked) == 0 {
		return nil, err
	}
	out := make([]*runtimeapi.AuthConfig, len(tracked))
	for i, t := range tracked {
		out[i] = t.Auth
	}
	return out, nil
}

// TrackedPullAuths is PullAuths with where each of the credentials comes
// from: the secret's namespace, name and UID, and upstream's hash of the
// entry (AuthHash), for the records of which credentials pulled an image
// (package cri/pullrecords).
func TrackedPullAuths(secrets []*v1.Secret, image string) ([]cri.TrackedAuth, error) {
	var k cri.Keyring
	for _, sec := range secrets {
		var cfg map[string]dockerConfigEntry
		switch {
		case sec.Type == v1.SecretTypeDockerConfigJson && len(sec.Data[v1.DockerConfigJsonKey]) > 0:
			var js struct {
				Auths map[string]dockerConfigEntry `json:"auths"`
			}
			if err := json.Unmarshal(sec.Data[v1.DockerConfigJsonKey], &js); err != nil {
				return nil, fmt.Errorf("image pull secret %s/%s: %s: %w", sec.Namespace, sec.Name, v1.DockerConfigJsonKey, err)
			}
			cfg = js.Auths
		case sec.Type == v1.SecretTypeDockercfg && len(sec.Data[v1.DockerConfigKey]) > 0:
			if err := json.Unmarshal(sec.Data[v1.DockerConfigKey], &cfg); err != nil {
				return nil, fmt.Errorf("image pull secret %s/%s: %s: %w", sec.Namespace, sec.Name, v1.DockerConfigKey, err)
			}
		default:
			continue
		}
		from := &cri.ObjectID{Namespace: sec.Namespace, Name: sec.Name, UID: string(sec.UID)}
		for _, loc := range slices.Sorted(maps.Keys(cfg)) {
			// In name order, so that credentials for one location keep a
			// stable order within a secret.
			e := cfg[loc]
			k.AddTracked(loc, cri.TrackedAuth{
				Auth:   &runtimeapi.AuthConfig{Username: e.Username, Password: e.Password},
				Secret: from,
				Hash:   AuthHash(e.Username, e.Password, e.Email),
			})
		}
	}
	return k.LookupTracked(cri.ImageRepository(image)), nil
}

// AuthHash is upstream's hash of registry credentials, which its records
// of pulled images keep instead of the credentials: the hex SHA-256 of
// {"username":…,"password":…,"email":…} as JSON, empty fields left out.
// Equal credentials in two secrets have the same hash.
func AuthHash(username, password, email string) string {
	b, err := json.Marshal(struct {
		Username string `json:"username,omitempty"`
		Password string `json:"password,omitempty"`
		Email    string `json:"email,omitempty"`
	}{username, password, email})
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// dockerConfigEntry is one registry's credentials in a docker config; an
// "auth" field (base64 of user:password) overrides username and password.
// The email only counts in the entry's hash.
type dockerConfigEntry struct {
	Username, Password, Email string
}

// errBadAuth is the error of an "auth" field that is not base64(user:password).
var errBadAuth = errors.New("unable to parse auth field, must be formatted as base64(username:password)")

func (e *dockerConfigEntry) UnmarshalJSON(b []byte) error {
	var raw struct {
		Username string `json:"username"`
		Password string `json:"password"`
		Email    string `json:"email"`
		Auth     string `json:"auth"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	e.Username, e.Password, e.Email = raw.Username, raw.Password, raw.Email
	if raw.Auth == "" {
		return nil
	}
	dec, err := base64.StdEncoding.DecodeString(raw.Auth)
	if err != nil {
		return errBadAuth
	}
	user, pass, ok := strings.Cut(string(dec), ":")
	if !ok {
		return errBadAuth
	}
	e.Username, e.Password = user, strings.Trim(pass, "\x00")
	return nil
}

// pullSecrets reads the pod's imagePullSecrets. One that cannot be read is
// left out, logged by name and reported in one Warning event, as upstream's.
func (s *Syncer) pullSecrets(ctx context.Context, pod *v1.Pod) []*v1.Secret {
	if len(pod.Spec.ImagePullSecrets) == 0 {
		return nil
	}
	var out []*v1.Secret
	var failed []string
	for _, ref := range pod.Spec.ImagePullSecrets {
		if ref.Name == "" {
			continue
		}
		if s.opts.Config.Secrets == nil {
			failed = append(failed, ref.Name)
			continue
		}
		sec, err := s.opts.Config.Secrets.GetSecret(ctx, pod.Namespace, ref.Name)
		if err != nil {
			s.log.Info("Unable to retrieve pull secret, the image pull may not succeed.", "pod", podDesc(pod), "secret", ref.Name, "err", err)
			failed = append(failed, ref.Name)
			continue
		}
		out = append(out, sec)
	}
	if len(failed) > 0 {
		s.event(pod, v1.EventTypeWarning, EventFailedToRetrieveImagePullSecret,
			"Unable to retrieve some image pull secrets (%s); attempting to pull the image may not succeed.", strings.Join(failed, ", "))
	}
	return out
}
