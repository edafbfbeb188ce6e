package credentialprovider

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeletconfigv1 "k8s.io/kubelet/config/v1"
	credentialproviderv1 "k8s.io/kubelet/pkg/apis/credentialprovider/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// errNotAsked is wrapped by provide's error when the plugin is not run for
// the pod by design: it requires a service account the pod lacks, or the
// service account lacks a required annotation.
var errNotAsked = errors.New("plugin not invoked")

// serviceAccount is what a run for a pod's service account adds: the
// token and annotations sent to the plugin, and key, the part of the cache
// key that is the service account's. The zero value: no service account.
type serviceAccount struct {
	token       string
	annotations map[string]string
	key         string
	// id names the service account, for the records of pulled images.
	id *cri.ObjectID
}

// serviceAccount gets, for a provider with tokenAttributes, the pod's
// service account, its annotations the provider names and a token for it
// bound to the pod, as upstream kubelet does; the zero value for a
// provider without tokenAttributes, or for a pod without a service account
// when the provider does not require one.
func (pl *plugin) serviceAccount(ctx context.Context, pod *v1.Pod) (serviceAccount, error) {
	ta := pl.cfg.TokenAttributes
	if ta == nil {
		return serviceAccount{}, nil
	}
	if pod == nil || pod.Spec.ServiceAccountName == "" {
		if *ta.RequireServiceAccount {
			return serviceAccount{}, fmt.Errorf("service account name is empty for pod %s: %w", podRef(pod), errNotAsked)
		}
		return serviceAccount{}, nil
	}
	ns, name := pod.Namespace, pod.Spec.ServiceAccountName
	got, err := pl.sa.GetServiceAccount(ctx, ns, name)
	if err != nil {
		return serviceAccount{}, fmt.Errorf("get service account %s/%s: %w", ns, name, err)
	}
	annotations := make(map[string]string, len(ta.RequiredServiceAccountAnnotationKeys)+len(ta.OptionalServiceAccountAnnotationKeys))
	for _, k := range ta.RequiredServiceAccountAnnotationKeys {
		v, ok := got.Annotations[k]
		if !ok {
			return serviceAccount{}, fmt.Errorf("service account %s/%s: required annotation %s not found: %w", ns, name, k, errNotAsked)
		}
		annotations[k] = v
	}
	for _, k := range ta.OptionalServiceAccountAnnotationKeys {
		if v, ok := got.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	token, err := pl.token(ctx, tokenKey{namespace: ns, name: name, account: got.UID, pod: pod.UID}, pod.Name)
	if err != nil {
		return serviceAccount{}, err
	}
	sa := serviceAccount{token: token, annotations: annotations, id: &cri.ObjectID{Namespace: ns, Name: name, UID: string(got.UID)}}
	sa.key = serviceAccountKey(ns, name, string(got.UID), annotations, ta.CacheType, sa.token)
	return sa, nil
}

// tokenMaxAge is how long a token is kept at the most, as upstream's token
// manager.
const tokenMaxAge = 24 * time.Hour

// tokenKey is what a pod's token is kept by (the audience is the
// provider's): the service account, with its UID, and the pod's UID.
type tokenKey struct {
	namespace, name string
	account, pod    types.UID
}

// keptToken is a token and when to ask a new one.
type keptToken struct {
	token   string
	refresh time.Time
}

// tokenCache is a provider's pods' tokens.
type tokenCache struct {
	mu      sync.Mutex
	entries map[tokenKey]keptToken
}

// token returns a token for the service account of key bound to the pod
// podName of key: the one kept, until 80% of its lifetime has passed (or a
// day), or a new one through TokenRequest, as upstream's token manager
// gives; so that a pod's pulls send the same token and the Token cache
// type serves them.
func (pl *plugin) token(ctx context.Context, key tokenKey, podName string) (string, error) {
	now := pl.clock.Now()
	c := &pl.tokens
	c.mu.Lock()
	kept, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Before(kept.refresh) {
		return kept.token, nil
	}
	tr, err := pl.sa.GetServiceAccountToken(ctx, key.namespace, key.name, &authenticationv1.TokenRequest{
		ObjectMeta: metav1.ObjectMeta{UID: key.account},
		Spec: authenticationv1.TokenRequestSpec{
			Audiences: []string{pl.cfg.TokenAttributes.ServiceAccountTokenAudience},
			// No expirationSeconds: the API server's default, as upstream.
			BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: podName, UID: key.pod},
		},
	})
	if err != nil {
		return "", fmt.Errorf("service account token %s/%s: %w", key.namespace, key.name, err)
	}
	if tr == nil || tr.Status.Token == "" {
		return "", fmt.Errorf("service account token %s/%s: the API server gave an empty token", key.namespace, key.name)
	}
	life := tr.Status.ExpirationTimestamp.Sub(now)
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if !now.Before(e.refresh) {
			delete(c.entries, k)
		}
	}
	if life > 0 { // no expiration: not kept
		if c.entries == nil {
			c.entries = map[tokenKey]keptToken{}
		}
		c.entries[key] = keptToken{token: tr.Status.Token, refresh: now.Add(min(life*8/10, tokenMaxAge))}
	}
	return tr.Status.Token, nil
}

// serviceAccountKey is the part of a cache key that is the service
// account's, as upstream's: its namespace, name, UID and the annotations
// sent; with the Token cache type, the token's hash too (pods of one
// service account then share nothing, a pod's pulls share while its token
// is the same). The pod is not part of it.
func serviceAccountKey(namespace, name, uid string, annotations map[string]string, cacheType kubeletconfigv1.ServiceAccountTokenCacheType, token string) string {
	parts := []string{namespace, name, uid, strconv.Itoa(len(annotations))}
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		parts = append(parts, k, annotations[k])
	}
	if cacheType == kubeletconfigv1.TokenServiceAccountTokenCacheType {
		parts = append(parts, "token", hashOf(token))
	}
	// Each part prefixed by its length: no two lists of parts give one key.
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(strconv.Itoa(len(p)))
		b.WriteByte(':')
		b.WriteString(p)
	}
	return b.String()
}

// hashOf is a token's SHA-256, never the token itself in a key; "" for "".
func hashOf(token string) string {
	if token == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(token))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// checkTokenNotEchoed refuses an answer whose password is the service
// account token sent unless the cache type is Token, as upstream: only
// with it does a cached credential not outlive the token.
func (pl *plugin) checkTokenNotEchoed(resp *credentialproviderv1.CredentialProviderResponse, token string) error {
	if token == "" || pl.cfg.TokenAttributes.CacheType == kubeletconfigv1.TokenServiceAccountTokenCacheType {
		return nil
	}
	for _, a := range resp.Auth {
		if a.Password == token {
			return errors.New("credential provider plugin returned the service account token as the password, which is not allowed when service account cache type is not set to 'Token'")
		}
	}
	return nil
}

// podRef names a pod in logs and errors.
func podRef(pod *v1.Pod) string {
	if pod == nil {
		return "<none>"
	}
	return pod.Namespace + "/" + pod.Name
}
