package apiserver

import (
	"context"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/volume"
)

// DefaultObjectTTL is how long a configMap or secret read from the API
// server is served from the cache (upstream's caching manager's default).
const DefaultObjectTTL = time.Minute

// VolumeSourcesOptions configure VolumeSources. Every field is optional.
type VolumeSourcesOptions struct {
	// TTL is how long an object (or its absence) is served from the
	// cache; 0 means DefaultObjectTTL, a negative value means every call
	// reads the API server.
	TTL time.Duration
	// Clock times the cache; nil means the real clock.
	Clock clock.PassiveClock
}

// VolumeSources are the volume block's sources on the API server
// (volume.Sources' three members): configMaps and secrets read with get and
// kept in a TTL cache, as upstream's caching configMap and secret managers
// (only the objects the node's pods ask for are ever read), and service
// account tokens through the TokenRequest API. Errors are the API server's:
// a missing object is NotFound (apierrors.IsNotFound). Safe for concurrent
// use.
type VolumeSources struct {
	client kubernetes.Interface
	ttl    time.Duration
	clock  clock.PassiveClock

	mu      sync.Mutex
	entries map[objectKey]cacheEntry
}

type objectKey struct{ kind, namespace, name string }

type cacheEntry struct {
	obj     any
	err     error // a NotFound, cached as upstream caches it
	expires time.Time
}

var (
	_ volume.ConfigMapSource = (*VolumeSources)(nil)
	_ volume.SecretSource    = (*VolumeSources)(nil)
	_ volume.TokenSource     = (*VolumeSources)(nil)
)

// NewVolumeSources returns the sources reading through client.
func NewVolumeSources(client kubernetes.Interface, opts VolumeSourcesOptions) (*VolumeSources, error) {
	if client == nil {
		return nil, fmt.Errorf("new volume sources: client is nil: %w", ErrInvalidArgument)
	}
	ttl := opts.TTL
	if ttl == 0 {
		ttl = DefaultObjectTTL
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &VolumeSources{client: client, ttl: ttl, clock: clk, entries: map[objectKey]cacheEntry{}}, nil
}

// Sources returns the three sources as the volume block takes them, and
// the claims of the same API server (Claims).
func (s *VolumeSources) Sources() volume.Sources {
	return volume.Sources{ConfigMaps: s, Secrets: s, Tokens: s, Claims: NewClaims(s.client)}
}

// GetConfigMap returns the configMap, from the cache while it is fresh.
// The object is shared: do not modify it.
func (s *VolumeSources) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	obj, err := s.get(ctx, objectKey{"configmap", namespace, name}, func(ctx context.Context) (any, error) {
		return s.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.ConfigMap), nil
}

// GetSecret returns the secret, from the cache while it is fresh. The
// object is shared: do not modify it.
func (s *VolumeSources) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	obj, err := s.get(ctx, objectKey{"secret", namespace, name}, func(ctx context.Context) (any, error) {
		return s.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	})
	if err != nil {
		return nil, err
	}
	return obj.(*v1.Secret), nil
}

// Forget drops every cached object, so the next reads go to the API
// server (upstream invalidates a pod's objects when the pod is added).
func (s *VolumeSources) Forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.entries)
}

func (s *VolumeSources) get(ctx context.Context, key objectKey, fetch func(context.Context) (any, error)) (any, error) {
	now := s.clock.Now()
	if s.ttl > 0 {
		s.mu.Lock()
		e, ok := s.entries[key]
		s.mu.Unlock()
		if ok && now.Before(e.expires) {
			return e.obj, e.err
		}
	}
	obj, err := fetch(ctx)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("get %s %s/%s: %w", key.kind, key.namespace, key.name, err)
	}
	if err != nil {
		obj = nil
	}
	if s.ttl > 0 {
		s.mu.Lock()
		for k, e := range s.entries { // drop what expired, so the cache holds only what is in use
			if !now.Before(e.expires) {
				delete(s.entries, k)
			}
		}
		s.entries[key] = cacheEntry{obj: obj, err: err, expires: now.Add(s.ttl)}
		s.mu.Unlock()
	}
	return obj, err
}

// GetServiceAccountToken requests a token for the service account
// namespace/name through the TokenRequest API (serviceaccounts/<name>/token).
// The request must be bound to a pod (Spec.BoundObjectRef of kind Pod with
// the pod's name and UID), as the volume block builds it and as the API
// server's node restriction demands of a kubelet; an unbound request is
// refused here with an error wrapping ErrInvalidArgument. The token is
// never logged.
func (s *VolumeSources) GetServiceAccountToken(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	return requestToken(ctx, s.client, namespace, name, req)
}

func requestToken(ctx context.Context, client kubernetes.Interface, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	if req == nil {
		return nil, fmt.Errorf("request token for %s/%s: no request: %w", namespace, name, ErrInvalidArgument)
	}
	ref := req.Spec.BoundObjectRef
	if ref == nil || ref.Kind != "Pod" || ref.Name == "" || ref.UID == "" {
		return nil, fmt.Errorf("request token for %s/%s: the request is not bound to a pod (boundObjectRef kind Pod, name, uid): %w", namespace, name, ErrInvalidArgument)
	}
	tr, err := client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("request token for %s/%s: %w", namespace, name, err)
	}
	return tr, nil
}
