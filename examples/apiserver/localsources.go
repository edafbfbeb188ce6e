package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/localstate"
	"github.com/kubeletkit/kubeletkit/volume"
)

// ErrTokenExpired is wrapped by KeptSources' error for a token the API
// server cannot renew and whose kept copy has expired.
var ErrTokenExpired = errors.New("service account token expired")

// KeptSourcesOptions configure KeptSources. Every field is optional.
type KeptSourcesOptions struct {
	// Logger receives the logs (never an object's data or a token); nil
	// discards them.
	Logger *slog.Logger
	// Clock tells whether a kept token has expired; nil means the real
	// clock.
	Clock clock.PassiveClock
}

// KeptSources write the configMaps, secrets and service account tokens
// that other sources (WatchingSources, VolumeSources) get from the API
// server through a local state, and serve the kept copies when the API
// server does not answer: the volume block refreshes a pod's volumes, and
// podsync builds its environment, from what the API server last said.
//
//   - An object read is kept (a write only when its resourceVersion
//     changed). A NotFound forgets the kept copy and is returned: the
//     object is gone, and an optional volume or env source works as it
//     does online.
//   - Any other error (the server does not answer, a timeout, an internal
//     error, a watch not yet synced) returns the kept copy when there is
//     one, and the error otherwise. Forbidden is returned as it is: the
//     server answered.
//   - A token issued is kept under localstate.TokenKey (the pod, service
//     account, audiences and lifetime); when a new one cannot be had, the
//     kept one is served until its expirationTimestamp and never after:
//     then the error wraps ErrTokenExpired, the volume block reports
//     FailedMount for the projected volume and retries, and the token file
//     the pod has keeps the expired token (it is not emptied), as upstream
//     kubelet leaves it when its token manager cannot renew.
//
// Safe for concurrent use.
type KeptSources struct {
	inner volume.Sources
	state *localstate.State
	log   *slog.Logger
	clock clock.PassiveClock

	mu      sync.Mutex
	serving map[string]bool // objects served from the local state, to log each once per outage
}

var (
	_ volume.ConfigMapSource = (*KeptSources)(nil)
	_ volume.SecretSource    = (*KeptSources)(nil)
	_ volume.TokenSource     = (*KeptSources)(nil)
)

// NewKeptSources returns inner's sources written through state. inner's
// members may be nil; Sources then leaves the same members nil.
func NewKeptSources(inner volume.Sources, state *localstate.State, opts KeptSourcesOptions) (*KeptSources, error) {
	if state == nil {
		return nil, fmt.Errorf("new kept sources: no local state: %w", ErrInvalidArgument)
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &KeptSources{inner: inner, state: state, log: orDiscard(opts.Logger), clock: clk, serving: map[string]bool{}}, nil
}

// Sources returns the sources as the volume block takes them, a member for
// each member inner has; Claims is inner's own.
func (k *KeptSources) Sources() volume.Sources {
	var s volume.Sources
	if k.inner.ConfigMaps != nil {
		s.ConfigMaps = k
	}
	if k.inner.Secrets != nil {
		s.Secrets = k
	}
	if k.inner.Tokens != nil {
		s.Tokens = k
	}
	// Claims are not kept: a node cut off from its API server runs the
	// pods whose claims it resolved before.
	s.Claims = k.inner.Claims
	return s
}

// answered reports whether err is an answer of the API server about the
// object (which the kept copy must not hide) rather than its silence, or
// the caller's ctx ended (nobody waits for a copy).
func answered(ctx context.Context, err error) bool {
	return ctx.Err() != nil || apierrors.IsNotFound(err) || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}

// GetConfigMap reads the configMap through the inner source, keeping it,
// or serves the kept copy when the API server does not answer.
func (k *KeptSources) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	if k.inner.ConfigMaps == nil {
		return nil, fmt.Errorf("get configmap %s/%s: %w", namespace, name, volume.ErrNoSource)
	}
	cm, err := k.inner.ConfigMaps.GetConfigMap(ctx, namespace, name)
	id := "configmap " + namespace + "/" + name
	switch {
	case err == nil:
		k.online(id)
		if perr := k.state.PutConfigMap(cm); perr != nil {
			k.log.Error("cannot keep the configMap in the local state", "configmap", namespace+"/"+name, "err", perr)
		}
		return cm, nil
	case apierrors.IsNotFound(err):
		if derr := k.state.DeleteConfigMap(namespace, name); derr != nil {
			k.log.Error("cannot forget the configMap in the local state", "configmap", namespace+"/"+name, "err", derr)
		}
		return nil, err
	case answered(ctx, err):
		return nil, err
	}
	kept, ok, kerr := k.state.ConfigMap(namespace, name)
	if kerr != nil || !ok {
		return nil, errors.Join(err, kerr)
	}
	k.offline(id, err)
	return kept, nil
}

// GetSecret reads the secret through the inner source, keeping it, or
// serves the kept copy when the API server does not answer.
func (k *KeptSources) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	if k.inner.Secrets == nil {
		return nil, fmt.Errorf("get secret %s/%s: %w", namespace, name, volume.ErrNoSource)
	}
	sec, err := k.inner.Secrets.GetSecret(ctx, namespace, name)
	id := "secret " + namespace + "/" + name
	switch {
	case err == nil:
		k.online(id)
		if perr := k.state.PutSecret(sec); perr != nil {
			k.log.Error("cannot keep the secret in the local state", "secret", namespace+"/"+name, "err", perr)
		}
		return sec, nil
	case apierrors.IsNotFound(err):
		if derr := k.state.DeleteSecret(namespace, name); derr != nil {
			k.log.Error("cannot forget the secret in the local state", "secret", namespace+"/"+name, "err", derr)
		}
		return nil, err
	case answered(ctx, err):
		return nil, err
	}
	kept, ok, kerr := k.state.Secret(namespace, name)
	if kerr != nil || !ok {
		return nil, errors.Join(err, kerr)
	}
	k.offline(id, err)
	return kept, nil
}

// GetServiceAccountToken requests a token through the inner source,
// keeping it, or serves the kept one while it has not expired.
func (k *KeptSources) GetServiceAccountToken(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	if k.inner.Tokens == nil {
		return nil, fmt.Errorf("request token for %s/%s: %w", namespace, name, volume.ErrNoSource)
	}
	key := localstate.TokenKey(namespace, name, req)
	id := "token " + namespace + "/" + name + " for pod " + podOfRequest(req)
	tr, err := k.inner.Tokens.GetServiceAccountToken(ctx, namespace, name, req)
	if err == nil {
		k.online(id)
		if perr := k.state.PutToken(key, tr); perr != nil {
			k.log.Error("cannot keep the token in the local state", "serviceaccount", namespace+"/"+name, "err", perr)
		}
		return tr, nil
	}
	if answered(ctx, err) || errors.Is(err, ErrInvalidArgument) {
		return nil, err
	}
	kept, ok, kerr := k.state.Token(key)
	if kerr != nil || !ok {
		return nil, errors.Join(err, kerr)
	}
	if exp := kept.Status.ExpirationTimestamp; exp.IsZero() || !k.clock.Now().Before(exp.Time) {
		return nil, fmt.Errorf("request token for %s/%s: the token kept in the local state expired at %s and the API server does not answer (%w): %w",
			namespace, name, exp.UTC().Format("2006-01-02T15:04:05Z"), err, ErrTokenExpired)
	}
	k.offline(id, err)
	return kept, nil
}

func podOfRequest(req *authenticationv1.TokenRequest) string {
	if req == nil || req.Spec.BoundObjectRef == nil {
		return "?"
	}
	return string(req.Spec.BoundObjectRef.UID)
}

// offline logs, once per outage and object, that the kept copy is served.
func (k *KeptSources) offline(id string, err error) {
	k.mu.Lock()
	first := !k.serving[id]
	k.serving[id] = true
	k.mu.Unlock()
	if first {
		k.log.Warn("the API server does not answer: serving the copy kept in the local state", "object", id, "err", err)
	}
}

func (k *KeptSources) online(id string) {
	k.mu.Lock()
	was := k.serving[id]
	delete(k.serving, id)
	k.mu.Unlock()
	if was {
		k.log.Info("the API server answers again", "object", id)
	}
}
