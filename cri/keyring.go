package cri

import (
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Keyring indexes registry credentials by location ("host[:port][/path]",
// the host labels possibly globs) and finds those for an image as
// upstream's keyring does: every location that matches the image's
// repository (LocationMatches), the most specific first, and for an image
// of Docker Hub the index.docker.io entry when nothing else matched. The
// zero value is empty and ready; it is not safe for concurrent use.
type Keyring struct {
	index []string
	creds map[string][]TrackedAuth
}

// TrackedAuth is registry credentials with where they come from, as
// upstream's keyring tracks them for its records of which credentials
// pulled an image (package cri/pullrecords): a pod's image pull secret, a
// credential provider plugin that was given a token of the pod's service
// account, or (neither) the node's own, which any pod on the node may use.
type TrackedAuth struct {
	// Auth are the credentials.
	Auth *runtimeapi.AuthConfig
	// Secret is the image pull secret they were read from, if any.
	Secret *ObjectID
	// ServiceAccount is the service account whose token a credential
	// provider plugin was given for them, if any.
	ServiceAccount *ObjectID
	// Hash identifies the credentials without holding them: upstream's
	// hash of a pull secret's entry (the hex SHA-256 of its username,
	// password and email as JSON). Empty when not computed.
	Hash string
}

// ObjectID names an API object: a secret or a service account.
type ObjectID struct {
	Namespace, Name, UID string
}

// Add files auth under its location, as the node's own credentials
// (AddTracked with no source).
func (k *Keyring) Add(location string, auth *runtimeapi.AuthConfig) {
	k.AddTracked(location, TrackedAuth{Auth: auth})
}

// AddTracked files credentials under their location: a scheme and a /v1/
// or /v2/ path prefix are dropped, as upstream's. A location that is not a
// URL is skipped, as upstream skips it. Credentials added for one location
// are tried in the order they were added.
func (k *Keyring) AddTracked(location string, auth TrackedAuth) {
	value := location
	if !strings.HasPrefix(value, "https://") && !strings.HasPrefix(value, "http://") {
		value = "https://" + value
	}
	u, err := url.Parse(value)
	if err != nil {
		return
	}
	path := u.Path
	if strings.HasPrefix(path, "/v2/") || strings.HasPrefix(path, "/v1/") {
		path = path[3:]
	}
	key := u.Host
	if path != "" && path != "/" {
		key += path
	}
	if k.creds == nil {
		k.creds = map[string][]TrackedAuth{}
	}
	if _, ok := k.creds[key]; !ok {
		k.index = append(k.index, key)
		// Reverse order puts longer (more specific) keys of a host first,
		// and plain labels before globs.
		slices.Sort(k.index)
		slices.Reverse(k.index)
	}
	k.creds[key] = append(k.creds[key], auth)
}

// Lookup returns the credentials for a normalized repository
// (ImageRepository), the most specific location first.
func (k *Keyring) Lookup(repo string) []*runtimeapi.AuthConfig {
	tracked := k.LookupTracked(repo)
	if len(tracked) == 0 {
		return nil
	}
	out := make([]*runtimeapi.AuthConfig, len(tracked))
	for i, t := range tracked {
		out[i] = t.Auth
	}
	return out
}

// LookupTracked is Lookup with where each of the credentials comes from.
func (k *Keyring) LookupTracked(repo string) []TrackedAuth {
	var out []TrackedAuth
	for _, key := range k.index {
		if LocationMatches(key, repo) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && isDockerHub(repo) {
		out = k.creds["index.docker.io"]
	}
	return out
}

// LocationMatches says whether a registry location covers a target
// ("host[:port][/path]" both): the same number of host labels, each
// matching the location's label as a glob ("*.registry.io",
// "k8s.*.io"), the same port, and the location's path a prefix of the
// target's. This is upstream's matching of keyring entries and of a
// credential provider's matchImages.
func LocationMatches(glob, target string) bool {
	g, err := url.Parse("https://" + glob)
	if err != nil {
		return false
	}
	t, err := url.Parse("https://" + target)
	if err != nil {
		return false
	}
	gParts, gPort := splitHost(g.Host)
	tParts, tPort := splitHost(t.Host)
	if gPort != tPort || len(gParts) != len(tParts) || !strings.HasPrefix(t.Path, g.Path) {
		return false
	}
	for i := range gParts {
		if ok, err := filepath.Match(gParts[i], tParts[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func splitHost(hostport string) ([]string, string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}

// isDockerHub says whether a repository is on Docker Hub.
func isDockerHub(repo string) bool {
	domain, _, found := strings.Cut(repo, "/")
	if domain == "" {
		return false
	}
	if !found || domain == "docker.io" || domain == "index.docker.io" {
		return true
	}
	return !strings.ContainsAny(domain, ".:")
}
