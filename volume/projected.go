package volume

import (
	"context"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/volume/atomicwriter"
)

// defaultTokenExpiration is the API's default expirationSeconds.
const defaultTokenExpiration int64 = 3600

// tokenMaxAge is how old a token may get before it is requested again
// whatever its expiry, as upstream's token manager.
const tokenMaxAge = 24 * time.Hour

func projectedPayload(src Sources, tokens *tokenCache, alloc v1.ResourceList) payloadFunc {
	return func(ctx context.Context, v *Volume) (map[string]atomicwriter.File, error) {
		s := v.Spec.Projected
		def := defaultOr(s.DefaultMode)
		files := map[string]atomicwriter.File{}
		for i, ps := range s.Sources {
			// Each source writes into its own map first, so that a path
			// given by two sources is reported as such.
			part := map[string]atomicwriter.File{}
			var err error
			switch {
			case ps.ConfigMap != nil:
				c := ps.ConfigMap
				optional := c.Optional != nil && *c.Optional
				var cm *v1.ConfigMap
				if cm, err = getConfigMap(ctx, src.ConfigMaps, v.Pod.Namespace, c.Name, optional); err == nil && cm != nil {
					err = keyedPayload(part, "configmap", configMapData(cm), c.Items, def, optional)
				}
			case ps.Secret != nil:
				c := ps.Secret
				optional := c.Optional != nil && *c.Optional
				var sec *v1.Secret
				if sec, err = getSecret(ctx, src.Secrets, v.Pod.Namespace, c.Name, optional); err == nil && sec != nil {
					err = keyedPayload(part, "secret", secretData(sec), c.Items, def, optional)
				}
			case ps.DownwardAPI != nil:
				err = downwardAPIFiles(part, v.Pod, ps.DownwardAPI.Items, def, alloc)
			case ps.ServiceAccountToken != nil:
				err = tokenFile(ctx, part, tokens, v.Pod, ps.ServiceAccountToken, def)
			case ps.ClusterTrustBundle != nil:
				err = fmt.Errorf("%w: clusterTrustBundle projection", ErrUnsupported)
			case ps.PodCertificate != nil:
				err = fmt.Errorf("%w: podCertificate projection", ErrUnsupported)
			default:
				err = fmt.Errorf("%w: projected source %d is empty", ErrInvalidVolume, i)
			}
			if err != nil {
				return nil, err
			}
			for p, f := range part {
				if _, dup := files[p]; dup {
					return nil, fmt.Errorf("%w: projected path %q is written by more than one source", ErrInvalidVolume, p)
				}
				files[p] = f
			}
		}
		return files, nil
	}
}

func tokenFile(ctx context.Context, files map[string]atomicwriter.File, tokens *tokenCache, pod *v1.Pod, p *v1.ServiceAccountTokenProjection, def int32) error {
	mode, err := fileMode("serviceAccountToken", nil, def)
	if err != nil {
		return err
	}
	tok, err := tokens.get(ctx, pod, p)
	if err != nil {
		return err
	}
	return addFile(files, "serviceAccountToken", p.Path, []byte(tok), mode)
}

// tokenKey identifies one token of one pod.
type tokenKey struct {
	uid                types.UID
	namespace, account string
	audience           string
	expirationSeconds  int64
}

type tokenEntry struct {
	token   string
	fetched time.Time
	refresh time.Time // when to ask again: 80% of the lifetime, at most 24h
}

// tokenCache keeps service account tokens per pod and asks for a new one
// when 80% of the old one's lifetime has passed or it is a day old, as
// upstream's token manager; so refreshing a projected volume every minute
// does not request a token every minute. Safe for concurrent use.
type tokenCache struct {
	src func() TokenSource
	now func() time.Time

	mu      sync.Mutex
	entries map[tokenKey]tokenEntry
}

func (c *tokenCache) get(ctx context.Context, pod *v1.Pod, p *v1.ServiceAccountTokenProjection) (string, error) {
	src := c.src()
	if src == nil {
		return "", fmt.Errorf("serviceAccountToken: %w (Options.Sources.Tokens)", ErrNoSource)
	}
	account := pod.Spec.ServiceAccountName
	if account == "" {
		account = "default"
	}
	exp := defaultTokenExpiration
	if p.ExpirationSeconds != nil {
		exp = *p.ExpirationSeconds
	}
	key := tokenKey{pod.UID, pod.Namespace, account, p.Audience, exp}
	now := c.now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Before(e.refresh) {
		return e.token, nil
	}
	req := &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			ExpirationSeconds: &exp,
			BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
		},
	}
	if p.Audience != "" {
		req.Spec.Audiences = []string{p.Audience}
	}
	resp, err := src.GetServiceAccountToken(ctx, pod.Namespace, account, req)
	if err != nil {
		if ok && now.Before(e.fetched.Add(time.Duration(exp)*time.Second)) {
			// Keep serving the old token while it is still valid.
			return e.token, nil
		}
		return "", fmt.Errorf("serviceAccountToken for %s/%s: %w", pod.Namespace, account, err)
	}
	if resp == nil || resp.Status.Token == "" {
		return "", fmt.Errorf("serviceAccountToken for %s/%s: the token source returned no token", pod.Namespace, account)
	}
	life := resp.Status.ExpirationTimestamp.Time.Sub(now)
	if resp.Status.ExpirationTimestamp.IsZero() || life <= 0 {
		life = time.Duration(exp) * time.Second
	}
	refresh := life * 8 / 10
	if refresh > tokenMaxAge {
		refresh = tokenMaxAge
	}
	c.mu.Lock()
	if c.entries == nil {
		c.entries = map[tokenKey]tokenEntry{}
	}
	c.entries[key] = tokenEntry{token: resp.Status.Token, fetched: now, refresh: now.Add(refresh)}
	c.mu.Unlock()
	return resp.Status.Token, nil
}

// forget drops a pod's tokens.
func (c *tokenCache) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if k.uid == uid {
			delete(c.entries, k)
		}
	}
}
