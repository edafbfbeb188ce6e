package volume

import (
	"context"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ConfigMapSource gives configMaps. A missing one is an error for which
// apimachinery's errors.IsNotFound is true (that is what lets optional
// volumes be empty instead of failing).
type ConfigMapSource interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
}

// SecretSource gives secrets; a missing one is a NotFound error.
type SecretSource interface {
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// TokenSource issues service account tokens (the API server's
// serviceaccounts/<name>/token subresource).
type TokenSource interface {
	GetServiceAccountToken(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
}

// ClaimSource gives PersistentVolumeClaims and PersistentVolumes, which a
// pod's persistentVolumeClaim and ephemeral volumes name. A missing one is
// a NotFound error ("persistentvolumeclaim", "persistentvolume").
type ClaimSource interface {
	GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error)
	GetPersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error)
}

// CSIDriverSource gives CSIDriver objects (storage.k8s.io/v1); a missing
// one is a NotFound error ("csidriver"). It is an optional extension of a
// ClaimSource, found by type assertion: with it, a CSI persistent volume
// whose driver needs attaching (attachRequired, true when the CSIDriver
// is missing, as upstream) is held, and a driver's podInfoOnMount is
// honoured; without it, every CSI driver is taken as one that needs no
// attaching and wants no pod information.
type CSIDriverSource interface {
	GetCSIDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error)
}

// ConfigMapSourceFunc adapts a function to ConfigMapSource.
type ConfigMapSourceFunc func(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)

// GetConfigMap calls f.
func (f ConfigMapSourceFunc) GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	return f(ctx, namespace, name)
}

// SecretSourceFunc adapts a function to SecretSource.
type SecretSourceFunc func(ctx context.Context, namespace, name string) (*v1.Secret, error)

// GetSecret calls f.
func (f SecretSourceFunc) GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	return f(ctx, namespace, name)
}

// TokenSourceFunc adapts a function to TokenSource.
type TokenSourceFunc func(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)

// GetServiceAccountToken calls f.
func (f TokenSourceFunc) GetServiceAccountToken(ctx context.Context, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	return f(ctx, namespace, name, req)
}

var (
	_ ConfigMapSource = ConfigMapSourceFunc(nil)
	_ SecretSource    = SecretSourceFunc(nil)
	_ TokenSource     = TokenSourceFunc(nil)
	_ ConfigMapSource = (*StaticSources)(nil)
	_ SecretSource    = (*StaticSources)(nil)
	_ ClaimSource     = (*StaticSources)(nil)
	_ CSIDriverSource = (*StaticSources)(nil)
)

// Sources are where volume content comes from. Each is optional.
type Sources struct {
	ConfigMaps ConfigMapSource
	Secrets    SecretSource
	Tokens     TokenSource
	// Claims gives the claims and persistent volumes behind
	// persistentVolumeClaim and ephemeral volumes (nil: such a volume
	// fails to process, wrapping ErrNoSource).
	Claims ClaimSource
}

// NotFound returns the error a source gives for a missing object, the one
// upstream's managers give: resource is "configmap" or "secret", and the
// message reads `configmap "name" not found`.
func NotFound(resource, name string) error {
	return apierrors.NewNotFound(schema.GroupResource{Resource: resource}, name)
}

type nsName struct{ namespace, name string }

// StaticSources holds configMaps, secrets, claims, persistent volumes and
// CSIDrivers in memory, for an agent that
// reads them from files or a test. The zero value is empty and ready; it is
// safe for concurrent use. Objects are stored and returned as given: do not
// modify one after Set.
type StaticSources struct {
	mu         sync.RWMutex
	configMaps map[nsName]*v1.ConfigMap
	secrets    map[nsName]*v1.Secret
	claims     map[nsName]*v1.PersistentVolumeClaim
	pvs        map[string]*v1.PersistentVolume
	drivers    map[string]*storagev1.CSIDriver
}

// SetConfigMap adds or replaces cm (by its namespace and name).
func (s *StaticSources) SetConfigMap(cm *v1.ConfigMap) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.configMaps == nil {
		s.configMaps = map[nsName]*v1.ConfigMap{}
	}
	s.configMaps[nsName{cm.Namespace, cm.Name}] = cm
}

// DeleteConfigMap removes a configMap.
func (s *StaticSources) DeleteConfigMap(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.configMaps, nsName{namespace, name})
}

// SetSecret adds or replaces sec (by its namespace and name).
func (s *StaticSources) SetSecret(sec *v1.Secret) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.secrets == nil {
		s.secrets = map[nsName]*v1.Secret{}
	}
	s.secrets[nsName{sec.Namespace, sec.Name}] = sec
}

// DeleteSecret removes a secret.
func (s *StaticSources) DeleteSecret(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.secrets, nsName{namespace, name})
}

// GetConfigMap returns a configMap or NotFound("configmap", name).
func (s *StaticSources) GetConfigMap(_ context.Context, namespace, name string) (*v1.ConfigMap, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if cm, ok := s.configMaps[nsName{namespace, name}]; ok {
		return cm, nil
	}
	return nil, NotFound("configmap", name)
}

// GetSecret returns a secret or NotFound("secret", name).
func (s *StaticSources) GetSecret(_ context.Context, namespace, name string) (*v1.Secret, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sec, ok := s.secrets[nsName{namespace, name}]; ok {
		return sec, nil
	}
	return nil, NotFound("secret", name)
}

// SetPersistentVolumeClaim adds or replaces a claim (by its namespace and
// name).
func (s *StaticSources) SetPersistentVolumeClaim(c *v1.PersistentVolumeClaim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.claims == nil {
		s.claims = map[nsName]*v1.PersistentVolumeClaim{}
	}
	s.claims[nsName{c.Namespace, c.Name}] = c
}

// DeletePersistentVolumeClaim removes a claim.
func (s *StaticSources) DeletePersistentVolumeClaim(namespace, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.claims, nsName{namespace, name})
}

// SetPersistentVolume adds or replaces a persistent volume (by its name).
func (s *StaticSources) SetPersistentVolume(pv *v1.PersistentVolume) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pvs == nil {
		s.pvs = map[string]*v1.PersistentVolume{}
	}
	s.pvs[pv.Name] = pv
}

// SetCSIDriver adds or replaces a CSIDriver (by its name).
func (s *StaticSources) SetCSIDriver(d *storagev1.CSIDriver) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drivers == nil {
		s.drivers = map[string]*storagev1.CSIDriver{}
	}
	s.drivers[d.Name] = d
}

// GetPersistentVolumeClaim returns a claim or
// NotFound("persistentvolumeclaim", name).
func (s *StaticSources) GetPersistentVolumeClaim(_ context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if c, ok := s.claims[nsName{namespace, name}]; ok {
		return c, nil
	}
	return nil, NotFound("persistentvolumeclaim", name)
}

// GetPersistentVolume returns a persistent volume or
// NotFound("persistentvolume", name).
func (s *StaticSources) GetPersistentVolume(_ context.Context, name string) (*v1.PersistentVolume, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if pv, ok := s.pvs[name]; ok {
		return pv, nil
	}
	return nil, NotFound("persistentvolume", name)
}

// GetCSIDriver returns a CSIDriver or NotFound("csidriver", name).
func (s *StaticSources) GetCSIDriver(_ context.Context, name string) (*storagev1.CSIDriver, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if d, ok := s.drivers[name]; ok {
		return d, nil
	}
	return nil, NotFound("csidriver", name)
}
