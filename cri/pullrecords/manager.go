package pullrecords

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// ErrInvalidOptions is wrapped by New's errors.
var ErrInvalidOptions = errors.New("invalid options")

// ErrNotOpen is wrapped by RecordIntent's error before Open.
var ErrNotOpen = errors.New("pull records are not open")

// ImageLister lists the runtime's images (cri.ImageManager has it).
type ImageLister interface {
	ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error)
}

// Options configure a Manager.
type Options struct {
	// Dir holds the records: upstream's <root-dir>/image_manager
	// (DirName). Required.
	Dir string
	// Policy says which images present on the node a pod must show its
	// credentials for. Empty means DefaultPolicy
	// (NeverVerifyPreloadedImages), upstream's.
	Policy Policy
	// Allowlist are the images NeverVerifyAllowlistedImages lets any pod
	// use (ParseAllowlist); only with that policy.
	Allowlist []string
	// Clock stamps the records. Nil means the real clock.
	Clock clock.PassiveClock
	// Logger receives the records' failures, by image and reference,
	// never credentials. Nil discards.
	Logger *slog.Logger
}

// Manager keeps the node's records of which credentials pulled which
// image, and answers whether a pod may use an image present on the node
// without pulling it with its own credentials: upstream's image pull
// manager (KubeletEnsureSecretPulledImages). The puller records an intent
// before each pull (RecordIntent) and its end (RecordPulled with the
// credentials that worked, or RecordFailed); MustPull decides (Decide)
// for an image that is present; Prune forgets the records of images the
// runtime no longer has. New touches nothing; Open reads the store and
// turns the intents a restart interrupted into records. A Manager is safe
// for concurrent use: one mutex orders its reads and writes of the store;
// a pod's credentials are looked up outside it.
type Manager struct {
	dir    string
	policy Policy
	allow  Allowlist
	clock  clock.PassiveClock
	log    *slog.Logger

	mu      sync.Mutex
	store   *Store         // nil until Open
	pulling map[string]int // pulls under way, by image
}

// New checks the options (CheckPolicy's problems and a missing Dir wrap
// ErrInvalidOptions) and returns a Manager. It touches no disk.
func New(opts Options) (*Manager, error) {
	if opts.Dir == "" {
		return nil, fmt.Errorf("pull records: Dir is required: %w", ErrInvalidOptions)
	}
	if opts.Policy == "" {
		opts.Policy = DefaultPolicy
	}
	if errs := CheckPolicy(opts.Policy, opts.Allowlist); len(errs) > 0 {
		return nil, fmt.Errorf("pull records: %w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	allow, _ := ParseAllowlist(opts.Allowlist)
	m := &Manager{dir: opts.Dir, policy: opts.Policy, allow: allow, clock: opts.Clock, log: opts.Logger, pulling: map[string]int{}}
	if m.clock == nil {
		m.clock = clock.RealClock{}
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	return m, nil
}

// Policy is the manager's policy.
func (m *Manager) Policy() Policy { return m.policy }

// Open opens the store (OpenStore; its error is Open's), rewrites the
// files of an older API version in the current one, and, as upstream's
// kubelet at start, turns the intents a restart interrupted into records
// for the images the runtime has under that exact reference (a repo tag
// or repo digest equal to the intent's image): records with no
// credentials, since what pulled them is unknown, so that every pod must
// show its own. An intent whose image the runtime does not have stays: the
// node still counts the image as pulled by itself. Failures other than
// the store's are logged.
func (m *Manager) Open(ctx context.Context, images ImageLister) error {
	s, err := OpenStore(m.dir)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.store = s
	intents, old, err := s.Intents()
	if err != nil {
		m.log.Error("Some image pull intents could not be read", "err", err)
	}
	for i, image := range intents {
		if old[i] {
			if err := s.WriteIntent(image); err != nil {
				m.log.Error("Failed to migrate an image pull intent to the current version", "image", image, "err", err)
			}
		}
	}
	records, old, err := s.Records()
	if err != nil {
		m.log.Error("Some image pulled records could not be read", "err", err)
	}
	for i, r := range records {
		if old[i] {
			if err := s.WriteRecord(r); err != nil {
				m.log.Error("Failed to migrate an image pulled record to the current version", "imageRef", r.ImageRef, "err", err)
			}
		}
	}
	if len(intents) == 0 {
		return nil
	}
	present, err := images.ListImages(ctx, nil)
	if err != nil {
		m.log.Error("Failed to list images: the image pull intents of the last run stay", "err", err)
	}
	interrupted := make(map[string]bool, len(intents))
	for _, image := range intents {
		interrupted[image] = true
	}
	for _, img := range present {
		for _, ref := range slices.Concat(img.GetRepoDigests(), img.GetRepoTags()) {
			if !interrupted[ref] {
				continue
			}
			if err := m.writeRecordLocked(ref, img.GetId(), nil); err != nil {
				m.log.Error("Failed to write an image pulled record", "image", ref, "imageRef", img.GetId(), "err", err)
				continue
			}
			if err := s.DeleteIntent(ref); err != nil {
				m.log.Warn("Failed to remove an image pull intent", "image", ref, "err", err)
			}
		}
	}
	return nil
}

// MustPull says whether a pod asking for image (the container's image
// field), present on the node as imageRef, must have it pulled with its
// own credentials (Decide, on the image's record and intent). pod looks
// the pod's credentials up; it is called at most once, and only when the
// records need them; its error is MustPull's, with true. A record that
// cannot be read, or a manager not open, means true.
func (m *Manager) MustPull(ctx context.Context, image, imageRef string, pod func() (PodCredentials, error)) (bool, error) {
	if imageRef == "" {
		return true, nil
	}
	in := Input{Policy: m.policy, Allowlist: m.allow, Image: image}
	err := func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.store == nil {
			return ErrNotOpen
		}
		var err error
		var exists bool
		if in.Record, exists, err = m.store.Record(imageRef); err != nil || exists {
			return err
		}
		if m.pulling[image] > 0 {
			in.Intent = true
			return nil
		}
		if in.Intent, err = m.store.IntentExists(image); err != nil {
			return fmt.Errorf("failed to check existence of an image pull intent: %w", err)
		}
		return nil
	}()
	if err != nil {
		m.log.Error("Unable to access cache records about image pulls", "image", image, "imageRef", imageRef, "err", err)
		in.Unreadable = true
	}
	d := Decide(in)
	if d.Verdict == NeedPodCredentials {
		pc, err := pod()
		if err != nil {
			return true, err
		}
		in.Pod = &pc
		d = Decide(in)
	}
	if d.Remember != nil {
		m.mu.Lock()
		err := m.writeRecordLocked(image, imageRef, &Credentials{Secrets: []Secret{*d.Remember}})
		m.mu.Unlock()
		if err != nil {
			m.log.Error("Failed to write an image pulled record", "image", image, "imageRef", imageRef, "err", err)
		}
	}
	return d.Verdict == MustPull, nil
}

// RecordIntent records that image is about to be pulled; each call is
// matched by one RecordPulled or RecordFailed. Its error (the store's, or
// ErrNotOpen) means the pull must not go on.
func (m *Manager) RecordIntent(image string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.store == nil {
		return fmt.Errorf("failed to record image pull intent: %w", ErrNotOpen)
	}
	if err := m.store.WriteIntent(image); err != nil {
		return fmt.Errorf("failed to record image pull intent: %w", err)
	}
	m.pulling[image]++
	return nil
}

// RecordPulled records that image was pulled as imageRef with creds
// (CredentialsOf the credentials that worked), merged into the image's
// record (MergeCredentials), and ends the intent. A record that cannot be
// written is logged, and the intent stays, as upstream's: the node still
// counts the image as pulled by itself, and the next start turns the
// intent into a record.
func (m *Manager) RecordPulled(image, imageRef string, creds Credentials) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.writeRecordLocked(image, imageRef, &creds); err != nil {
		m.log.Error("Failed to write an image pulled record", "image", image, "imageRef", imageRef, "err", err)
		return
	}
	m.endIntentLocked(image)
}

// RecordFailed ends the intent of a pull of image that failed.
func (m *Manager) RecordFailed(image string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.endIntentLocked(image)
}

// endIntentLocked counts one pull of image less, and removes its intent
// when it was the last.
func (m *Manager) endIntentLocked(image string) {
	if m.pulling[image] > 1 {
		m.pulling[image]--
		return
	}
	if m.store != nil {
		if err := m.store.DeleteIntent(image); err != nil {
			m.log.Error("Failed to remove an image pull intent", "image", image, "err", err)
			return
		}
	}
	delete(m.pulling, image)
}

// writeRecordLocked merges creds into imageRef's record under image and
// writes it if it changed; a record that cannot be read is replaced.
func (m *Manager) writeRecordLocked(image, imageRef string, creds *Credentials) error {
	if m.store == nil {
		return ErrNotOpen
	}
	if _, err := ImageName(image); err != nil {
		return fmt.Errorf("invalid image name %q: %w", image, err)
	}
	r, _, err := m.store.Record(imageRef)
	if err != nil {
		m.log.Info("Failed to read an image pulled record; it is replaced", "image", image, "imageRef", imageRef, "err", err)
		r = nil
	}
	next, changed := MergeCredentials(r, imageRef, image, creds, m.clock.Now())
	if !changed {
		return nil
	}
	return m.store.WriteRecord(next)
}

// Prune removes the records of the images not in remaining (the IDs of
// the images the runtime still has) that last changed before until (when
// the listing began: a record written since is of a pull the listing may
// have missed), as upstream's image garbage collection does after it
// removed images. Failures are logged.
func (m *Manager) Prune(ctx context.Context, remaining []string, until time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.store == nil {
		return
	}
	records, _, err := m.store.Records()
	if err != nil {
		m.log.Error("Some image pulled records could not be read; pruning the others", "err", err)
	}
	keep := make(map[string]bool, len(remaining))
	for _, ref := range remaining {
		keep[ref] = true
	}
	// Records keep whole seconds.
	until = until.Truncate(time.Second)
	for _, r := range records {
		if keep[r.ImageRef] || !r.LastUpdated.Before(until) {
			continue
		}
		if err := m.store.DeleteRecord(r.ImageRef); err != nil {
			m.log.Error("Failed to remove an image pulled record", "imageRef", r.ImageRef, "err", err)
		}
	}
}
