package localstate

import (
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"sync"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// State is the node's local state in Kubernetes' own types, over a Store:
// the pods bound to the node, the configMaps, secrets and tokens they read,
// the pod statuses not yet acknowledged, and the cluster's services (the
// containers' service environment variables, without which upstream
// kubelet, and package agent, create no container of an API pod). Values are the objects'
// protobuf encoding. A write that changes nothing (the same object at the
// same resourceVersion) is skipped, so writing through on every read
// costs a map lookup. Safe for concurrent use.
type State struct {
	store Store

	mu    sync.Mutex
	known map[Key]string // what each key holds: UID/resourceVersion, or a hash of the value
}

// New returns the State kept in store. It reads the store once to learn
// what it holds.
func New(store Store) (*State, error) {
	if store == nil {
		return nil, fmt.Errorf("new local state: nil store: %w", ErrInvalidArgument)
	}
	s := &State{store: store, known: map[Key]string{}}
	for _, k := range []Kind{Pods, ConfigMaps, Secrets, PodStatuses, Services} {
		vals, err := store.List(k)
		if err != nil {
			return nil, fmt.Errorf("new local state: %w", err)
		}
		for key, v := range vals {
			s.known[Key{k, key}] = fingerprintBytes(k, v)
		}
	}
	return s, nil
}

// Store returns the store under s.
func (s *State) Store() Store { return s.store }

// Pods returns the pods kept, ordered by namespace and name. A value that
// does not decode is left out and named in the error, which is then
// non-nil beside the pods that did decode.
func (s *State) Pods() ([]*v1.Pod, error) {
	vals, err := s.store.List(Pods)
	if err != nil {
		return nil, fmt.Errorf("read pods: %w", err)
	}
	var errs []error
	pods := make([]*v1.Pod, 0, len(vals))
	for key, v := range vals {
		p := &v1.Pod{}
		if err := p.Unmarshal(v); err != nil {
			errs = append(errs, fmt.Errorf("pod %s: %w", key, err))
			continue
		}
		pods = append(pods, p)
	}
	slices.SortFunc(pods, func(a, b *v1.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return pods, errors.Join(errs...)
}

// Pod returns the kept pod of UID uid, and whether there is one.
func (s *State) Pod(uid types.UID) (*v1.Pod, bool, error) {
	return s.getPod(Key{Pods, string(uid)})
}

// getPod reads the pod (or the pod holding a status) kept under key.
func (s *State) getPod(key Key) (*v1.Pod, bool, error) {
	p := &v1.Pod{}
	ok, err := s.getObject(key, p)
	if !ok || err != nil {
		return nil, false, err
	}
	return p, true, nil
}

// SetPods makes the kept pods exactly pods, in one atomic write of what
// changed (pods are keyed by UID, a changed pod is one with another
// resourceVersion). It reports whether it wrote.
func (s *State) SetPods(pods []*v1.Pod) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b Batch
	keep := map[string]bool{}
	next := map[Key]string{}
	for _, p := range pods {
		if p == nil || p.UID == "" {
			continue
		}
		key := Key{Pods, string(p.UID)}
		keep[key.Key] = true
		fp, v, err := s.encodeIfChanged(key, p, &p.ObjectMeta)
		if err != nil {
			return false, fmt.Errorf("keep pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		if v != nil {
			b.Puts = append(b.Puts, Entry{key, v})
			next[key] = fp
		}
	}
	for k := range s.known {
		if k.Kind == Pods && !keep[k.Key] {
			b.Deletes = append(b.Deletes, k)
		}
	}
	if len(b.Puts) == 0 && len(b.Deletes) == 0 {
		return false, nil
	}
	if err := s.store.Write(b); err != nil {
		return false, fmt.Errorf("keep pods: %w", err)
	}
	for _, k := range b.Deletes {
		delete(s.known, k)
	}
	for k, fp := range next {
		s.known[k] = fp
	}
	return true, nil
}

// RefreshPod replaces the kept copy of pod (same UID) by pod, when one is
// kept at another resourceVersion: the API server's answer to a write of
// the node's own (a status patch) is kept before its watch tells the pod
// source. A pod not kept is not added: SetPods says which pods are kept.
// It reports whether it wrote.
func (s *State) RefreshPod(pod *v1.Pod) (bool, error) {
	if pod == nil || pod.UID == "" {
		return false, fmt.Errorf("refresh pod: no pod or UID: %w", ErrInvalidArgument)
	}
	key := Key{Pods, string(pod.UID)}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, kept := s.known[key]; !kept {
		return false, nil
	}
	fp, v, err := s.encodeIfChanged(key, pod, &pod.ObjectMeta)
	if err != nil {
		return false, fmt.Errorf("refresh pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if v == nil {
		return false, nil
	}
	if err := s.store.Write(Batch{Puts: []Entry{{key, v}}}); err != nil {
		return false, fmt.Errorf("refresh pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	s.known[key] = fp
	return true, nil
}

// SetServices makes the kept services exactly svcs, in one atomic write of
// what changed (keyed by namespace/name; a changed service is one with
// another UID or resourceVersion). It reports whether it wrote.
func (s *State) SetServices(svcs []*v1.Service) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b Batch
	keep := map[string]bool{}
	next := map[Key]string{}
	for _, svc := range svcs {
		if svc == nil {
			continue
		}
		key := Key{Services, ObjectKey(svc.Namespace, svc.Name)}
		keep[key.Key] = true
		fp, v, err := s.encodeIfChanged(key, svc, &svc.ObjectMeta)
		if err != nil {
			return false, fmt.Errorf("keep service %s: %w", key.Key, err)
		}
		if v != nil {
			b.Puts = append(b.Puts, Entry{key, v})
			next[key] = fp
		}
	}
	for k := range s.known {
		if k.Kind == Services && !keep[k.Key] {
			b.Deletes = append(b.Deletes, k)
		}
	}
	if len(b.Puts) == 0 && len(b.Deletes) == 0 {
		return false, nil
	}
	if err := s.store.Write(b); err != nil {
		return false, fmt.Errorf("keep services: %w", err)
	}
	for _, k := range b.Deletes {
		delete(s.known, k)
	}
	for k, fp := range next {
		s.known[k] = fp
	}
	return true, nil
}

// Services returns the kept services. A value that does not decode is
// left out and named in the error.
func (s *State) Services() ([]*v1.Service, error) {
	vals, err := s.store.List(Services)
	if err != nil {
		return nil, fmt.Errorf("read services: %w", err)
	}
	var errs []error
	out := make([]*v1.Service, 0, len(vals))
	for key, v := range vals {
		svc := &v1.Service{}
		if err := svc.Unmarshal(v); err != nil {
			errs = append(errs, fmt.Errorf("service %s: %w", key, err))
			continue
		}
		out = append(out, svc)
	}
	slices.SortFunc(out, func(a, b *v1.Service) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out, errors.Join(errs...)
}

// marshaler is what the Kubernetes types' generated protobuf code has.
type marshaler interface{ Marshal() ([]byte, error) }

// encodeIfChanged returns the fingerprint and encoding of obj when key does
// not hold it already, and a nil value when it does.
func (s *State) encodeIfChanged(key Key, obj marshaler, meta *metav1.ObjectMeta) (string, []byte, error) {
	if meta.ResourceVersion != "" {
		fp := string(meta.UID) + "/" + meta.ResourceVersion
		if s.known[key] == fp {
			return fp, nil, nil
		}
		v, err := obj.Marshal()
		return fp, v, err
	}
	v, err := obj.Marshal()
	if err != nil {
		return "", nil, err
	}
	fp := hashOf(v)
	if s.known[key] == fp {
		return fp, nil, nil
	}
	return fp, v, nil
}

// fingerprintBytes is what encodeIfChanged would have recorded for v.
func fingerprintBytes(kind Kind, v []byte) string {
	var meta *metav1.ObjectMeta
	switch kind {
	case Pods:
		p := &v1.Pod{}
		if p.Unmarshal(v) == nil {
			meta = &p.ObjectMeta
		}
	case ConfigMaps:
		c := &v1.ConfigMap{}
		if c.Unmarshal(v) == nil {
			meta = &c.ObjectMeta
		}
	case Secrets:
		c := &v1.Secret{}
		if c.Unmarshal(v) == nil {
			meta = &c.ObjectMeta
		}
	case Services:
		c := &v1.Service{}
		if c.Unmarshal(v) == nil {
			meta = &c.ObjectMeta
		}
	}
	if meta != nil && meta.ResourceVersion != "" {
		return string(meta.UID) + "/" + meta.ResourceVersion
	}
	return hashOf(v)
}

func hashOf(v []byte) string {
	h := fnv.New64a()
	_, _ = h.Write(v)
	return "#" + strconv.FormatUint(h.Sum64(), 16)
}

// ObjectKey is the key of a namespaced object: namespace/name.
func ObjectKey(namespace, name string) string { return namespace + "/" + name }

// PutConfigMap keeps cm (unless it is kept at the same resourceVersion).
func (s *State) PutConfigMap(cm *v1.ConfigMap) error {
	if cm == nil {
		return fmt.Errorf("keep configMap: nil: %w", ErrInvalidArgument)
	}
	return s.putObject(Key{ConfigMaps, ObjectKey(cm.Namespace, cm.Name)}, cm, &cm.ObjectMeta)
}

// ConfigMap returns the kept configMap namespace/name, and whether there
// is one.
func (s *State) ConfigMap(namespace, name string) (*v1.ConfigMap, bool, error) {
	cm := &v1.ConfigMap{}
	ok, err := s.getObject(Key{ConfigMaps, ObjectKey(namespace, name)}, cm)
	if !ok || err != nil {
		return nil, false, err
	}
	return cm, true, nil
}

// PutSecret keeps sec (unless it is kept at the same resourceVersion). A
// Bolt seals it with its SecretKey, or keeps nothing without one; nothing
// of it is logged.
func (s *State) PutSecret(sec *v1.Secret) error {
	if sec == nil {
		return fmt.Errorf("keep secret: nil: %w", ErrInvalidArgument)
	}
	return s.putObject(Key{Secrets, ObjectKey(sec.Namespace, sec.Name)}, sec, &sec.ObjectMeta)
}

// Secret returns the kept secret namespace/name, and whether there is one.
func (s *State) Secret(namespace, name string) (*v1.Secret, bool, error) {
	sec := &v1.Secret{}
	ok, err := s.getObject(Key{Secrets, ObjectKey(namespace, name)}, sec)
	if !ok || err != nil {
		return nil, false, err
	}
	return sec, true, nil
}

// DeleteConfigMap forgets the configMap namespace/name (the API server
// said it is gone).
func (s *State) DeleteConfigMap(namespace, name string) error {
	return s.deleteKey(Key{ConfigMaps, ObjectKey(namespace, name)})
}

// DeleteSecret forgets the secret namespace/name.
func (s *State) DeleteSecret(namespace, name string) error {
	return s.deleteKey(Key{Secrets, ObjectKey(namespace, name)})
}

// TokenKey is the key of the token a TokenRequest asks for: the service
// account, the pod it is bound to, its audiences and its lifetime. Two
// requests with the same key are interchangeable.
func TokenKey(namespace, serviceAccount string, req *authenticationv1.TokenRequest) string {
	var pod types.UID
	var exp int64
	var aud []string
	if req != nil {
		if r := req.Spec.BoundObjectRef; r != nil {
			pod = r.UID
		}
		if req.Spec.ExpirationSeconds != nil {
			exp = *req.Spec.ExpirationSeconds
		}
		aud = req.Spec.Audiences
	}
	return fmt.Sprintf("%s/%s/%s/%d/%s", namespace, serviceAccount, pod, exp, strings.Join(aud, ","))
}

// PutToken keeps the token the API server issued under key (TokenKey); a
// Bolt seals it as PutSecret's secret.
func (s *State) PutToken(key string, tr *authenticationv1.TokenRequest) error {
	if tr == nil || key == "" {
		return fmt.Errorf("keep token: no token or key: %w", ErrInvalidArgument)
	}
	return s.putObject(Key{Tokens, key}, tr, &tr.ObjectMeta)
}

// Token returns the token kept under key, and whether there is one. The
// caller decides whether it is still valid (Status.ExpirationTimestamp).
func (s *State) Token(key string) (*authenticationv1.TokenRequest, bool, error) {
	tr := &authenticationv1.TokenRequest{}
	ok, err := s.getObject(Key{Tokens, key}, tr)
	if !ok || err != nil {
		return nil, false, err
	}
	return tr, true, nil
}

// DeleteTokensOf forgets the tokens bound to pods that are not in live.
func (s *State) DeleteTokensOf(live map[types.UID]bool) error {
	vals, err := s.store.List(Tokens)
	if err != nil {
		return fmt.Errorf("forget tokens: %w", err)
	}
	var b Batch
	for key := range vals {
		parts := strings.SplitN(key, "/", 4)
		if len(parts) == 4 && !live[types.UID(parts[2])] {
			b.Deletes = append(b.Deletes, Key{Tokens, key})
		}
	}
	if len(b.Deletes) == 0 {
		return nil
	}
	if err := s.store.Write(b); err != nil {
		return fmt.Errorf("forget tokens: %w", err)
	}
	return nil
}

// PutPodStatus keeps st as the status of pod that the API server has not
// acknowledged, replacing the one kept before for the pod's UID. The same
// status kept again costs no write.
func (s *State) PutPodStatus(pod *v1.Pod, st v1.PodStatus) error {
	if pod == nil || pod.UID == "" {
		return fmt.Errorf("keep pod status: no pod or UID: %w", ErrInvalidArgument)
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}, Status: st}
	v, err := p.Marshal()
	if err != nil {
		return fmt.Errorf("keep status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	key := Key{PodStatuses, string(pod.UID)}
	fp := hashOf(v)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known[key] == fp {
		return nil // kept already: a status retried as it was costs no write
	}
	if err := s.store.Write(Batch{Puts: []Entry{{key, v}}}); err != nil {
		return fmt.Errorf("keep status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	s.known[key] = fp
	return nil
}

// PodStatuses returns the statuses kept as unacknowledged, each as a pod
// with only its namespace, name, UID and status, ordered by namespace and
// name. A value that does not decode is named in the error.
func (s *State) PodStatuses() ([]*v1.Pod, error) {
	vals, err := s.store.List(PodStatuses)
	if err != nil {
		return nil, fmt.Errorf("read pod statuses: %w", err)
	}
	var errs []error
	out := make([]*v1.Pod, 0, len(vals))
	for key, v := range vals {
		p := &v1.Pod{}
		if err := p.Unmarshal(v); err != nil {
			errs = append(errs, fmt.Errorf("status of pod %s: %w", key, err))
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *v1.Pod) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return out, errors.Join(errs...)
}

// PodStatus returns the unacknowledged status kept for the pod uid, as
// PodStatuses does, and whether there is one.
func (s *State) PodStatus(uid types.UID) (*v1.Pod, bool, error) {
	return s.getPod(Key{PodStatuses, string(uid)})
}

// DeletePodStatus forgets the unacknowledged status of the pod uid (the
// API server acknowledged it, or one after it, or the pod is gone). With
// none kept it writes nothing, so calling it after every acknowledged
// status is cheap.
func (s *State) DeletePodStatus(uid types.UID) error {
	return s.deleteKey(Key{PodStatuses, string(uid)})
}

func (s *State) putObject(key Key, obj marshaler, meta *metav1.ObjectMeta) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fp, v, err := s.encodeIfChanged(key, obj, meta)
	if err != nil {
		return fmt.Errorf("keep %s %s: %w", key.Kind, key.Key, err)
	}
	if v == nil {
		return nil
	}
	if err := s.store.Write(Batch{Puts: []Entry{{key, v}}}); err != nil {
		return fmt.Errorf("keep %s %s: %w", key.Kind, key.Key, err)
	}
	if key.Kind != Tokens {
		s.known[key] = fp
	}
	return nil
}

type unmarshaler interface{ Unmarshal([]byte) error }

func (s *State) getObject(key Key, into unmarshaler) (bool, error) {
	v, ok, err := s.store.Get(key.Kind, key.Key)
	if err != nil || !ok {
		return false, err
	}
	if err := into.Unmarshal(v); err != nil {
		return false, fmt.Errorf("read %s %s: %w", key.Kind, key.Key, err)
	}
	return true, nil
}

// deleteKey removes key; a key known to be absent costs no write.
func (s *State) deleteKey(key Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.known[key]; !ok && key.Kind != Tokens {
		return nil
	}
	if err := s.store.Write(Batch{Deletes: []Key{key}}); err != nil {
		return fmt.Errorf("forget %s %s: %w", key.Kind, key.Key, err)
	}
	delete(s.known, key)
	return nil
}
