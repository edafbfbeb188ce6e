package source

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/syncloop"
)

// Defaults of the static sources.
const (
	// DefaultPeriod is how often the file and URL sources read everything
	// again (upstream's fileCheckFrequency and httpCheckFrequency, 20s).
	DefaultPeriod = 20 * time.Second
	// DefaultPollInterval is how often the file source looks for changes in
	// the manifest directory between two full reads.
	DefaultPollInterval = time.Second
)

// FileOptions configure a File source.
type FileOptions struct {
	// Path is the manifest directory, or a single manifest file. Required.
	Path string
	// NodeName is the node's name: it suffixes the pods' names and is part
	// of their UIDs. Required.
	NodeName string
	// Out receives the source's messages, each a SET with all its pods:
	// usually Config.Channel(ctx, syncloop.SourceFile). Required.
	Out chan<- syncloop.PodUpdate
	// Period is how often every manifest is read again, changed or not
	// (20s).
	Period time.Duration
	// PollInterval is how often the directory is checked for a change
	// (names, sizes, modification times and modes of the files) when it is
	// not watched: with DisableWatch, outside Linux, when the kernel gives
	// no inotify instance or watch, or while Path and its parent are both
	// missing. A change makes a read at once (1s). Negative disables
	// polling.
	PollInterval time.Duration
	// DisableWatch polls every PollInterval instead of watching Path with
	// inotify: for a directory whose changes inotify does not see (a
	// network file system written by another machine, some FUSE file
	// systems), and for tests whose time is simulated (a fake Clock, a
	// testing/synctest bubble), where the kernel's notifications arrive
	// outside that time, and where, in a bubble, the goroutine waiting for
	// them keeps time from moving. False watches, as upstream, and polls
	// only when watching is impossible.
	DisableWatch bool
	// KeepLastGood keeps the pods of a manifest that was valid and became
	// invalid (a file being rewritten, a typo) until the manifest is valid
	// again or is deleted. False is upstream's behaviour: an invalid
	// manifest's pod is removed, and stopped.
	KeepLastGood bool
	// AllowAPIReferences accepts pods that reference API objects (secrets,
	// configMaps, ...: APIObjectReference), for an agent that serves such
	// objects to static pods itself. False is upstream's behaviour: such a
	// manifest is refused.
	AllowAPIReferences bool
	// Clock drives the periods; nil means the real clock.
	Clock clock.Clock
	// Logger receives the source's logs; nil discards them.
	Logger *slog.Logger
	// Recorder receives a Warning FailedValidation event, on the node, for
	// each manifest that cannot be used (once per distinct error); nil
	// means none.
	Recorder EventRecorder
}

// File is the static-pod manifest source: a directory of YAML or JSON
// manifests (or one file), each a v1.Pod or a v1.PodList. Run reads them
// all at once and then every Period. In between it watches Path with
// inotify and reads a manifest again as soon as it is written and closed,
// renamed into place or removed (or, when it cannot watch, polls every
// PollInterval and reads the files whose size, modification time or mode
// changed). Each read sends a SET with the pods of every valid manifest,
// prepared by ReadManifest. The pods of a manifest that was not read again
// are the same pointers as in the previous SET, which the merger takes as
// unchanged without comparing them.
//
// In a directory, files whose name starts with "." are ignored, and so are
// subdirectories and anything that is not a regular file (symbolic links are
// followed), as upstream. A manifest that cannot be read, decoded or
// validated is reported by its path with the error (a Warning log line and an
// event, once per distinct error; Errors lists the current ones) and does not
// affect the other manifests; its pods are left out of the SET (or, with
// KeepLastGood, its last valid pods are sent). When it becomes valid, its
// pods are sent with the next read. A missing Path sends an empty SET (the
// source is then "seen", as upstream); a directory that cannot be listed
// sends nothing, so the pods stay as they were.
type File struct {
	path, node   string
	out          chan<- syncloop.PodUpdate
	period, poll time.Duration
	keep         bool
	refs         bool
	clock        clock.Clock
	log          *slog.Logger
	rec          EventRecorder
	nodeRef      *v1.ObjectReference
	// newWatcher starts a watcher on a path: newInotify, nil with
	// DisableWatch; tests replace it.
	newWatcher func(path string) (watcher, error)

	lastGood map[string][]*v1.Pod  // by manifest path; only with keep
	cache    map[string]readResult // by manifest path
	pathErr  string                // the last error about Path itself

	mu   sync.Mutex
	errs map[string]error // by manifest path
}

// NewFile returns a File source. It starts nothing; Run does. It fails,
// wrapping ErrInvalidOptions, when Path, NodeName or Out is missing or
// Period is negative.
func NewFile(opts FileOptions) (*File, error) {
	var errs []error
	if opts.Path == "" {
		errs = append(errs, errors.New("path is required"))
	}
	if opts.NodeName == "" {
		errs = append(errs, errors.New("node name is required"))
	}
	if opts.Out == nil {
		errs = append(errs, errors.New("out channel is required"))
	}
	if opts.Period < 0 {
		errs = append(errs, fmt.Errorf("period %v is negative", opts.Period))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("source: new file: %w: %w", ErrInvalidOptions, err)
	}
	f := &File{
		path:    filepath.Clean(opts.Path),
		node:    opts.NodeName,
		out:     opts.Out,
		period:  opts.Period,
		poll:    opts.PollInterval,
		keep:    opts.KeepLastGood,
		refs:    opts.AllowAPIReferences,
		clock:   opts.Clock,
		log:     orDiscard(opts.Logger).With("path", opts.Path),
		rec:     orNopRecorder(opts.Recorder),
		nodeRef: &v1.ObjectReference{Kind: "Node", Name: opts.NodeName, UID: types.UID(opts.NodeName)},
		errs:    map[string]error{},
		cache:   map[string]readResult{},
	}
	if !opts.DisableWatch {
		f.newWatcher = newInotify
	}
	if f.period == 0 {
		f.period = DefaultPeriod
	}
	if f.poll == 0 {
		f.poll = DefaultPollInterval
	}
	if f.clock == nil {
		f.clock = clock.RealClock{}
	}
	if f.keep {
		f.lastGood = map[string][]*v1.Pod{}
	}
	return f, nil
}

// Errors returns the manifests that cannot be used now, by path, with why.
func (f *File) Errors() map[string]error {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]error, len(f.errs))
	for k, v := range f.errs {
		out[k] = v
	}
	return out
}

// Run reads the manifests and sends a SET at once, then every Period, and
// whenever the watch (or, when it cannot watch, a poll) sees a change. It
// returns nil when ctx ends, after closing its watch; the watch's goroutine,
// which reads the kernel's events, is the only one it starts. A send waits
// for the receiver until ctx ends.
func (f *File) Run(ctx context.Context) error {
	r := &fileRun{writing: map[string]time.Time{}}
	if f.newWatcher != nil {
		w, err := f.newWatcher(f.path)
		if err != nil {
			f.log.Warn("cannot watch static pod manifests, polling instead", "pollInterval", f.poll, "err", err)
		} else {
			r.w = w
			defer func() {
				if r.w != nil { // nil when the watch failed, closed then
					_ = r.w.Close()
				}
			}()
		}
	}
	f.arm(r)
	f.log.Info("watching static pod manifests", "period", f.period, "inotify", r.armed, "pollInterval", f.poll)
	f.sync(ctx, r, readAll, nil)
	for {
		wait := f.wait(r)
		if wait <= 0 {
			f.onTimer(ctx, r)
			continue
		}
		t := f.clock.NewTimer(wait)
		var ready <-chan struct{}
		if r.w != nil {
			ready = r.w.Ready()
		}
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-ready:
			t.Stop()
			f.onWatch(ctx, r, r.w.Take())
		case <-t.C():
			f.onTimer(ctx, r)
		}
	}
}

// fileRun is the state of one Run.
type fileRun struct {
	w       watcher // nil when not watching
	armed   bool    // w sees every change: no polling
	armErr  string  // why it is not armed, as last logged
	fp      uint64  // while polling, the fingerprint the last read started from
	last    time.Time
	writing map[string]time.Time // manifests being written, since when
}

// readKind is how much a read reads.
type readKind uint8

const (
	// readAll lists Path and reads every manifest: every Period.
	readAll readKind = iota
	// readChanged lists Path and reads the manifests whose size,
	// modification time or mode changed, and those named: after a poll
	// saw a change, or Path itself changed.
	readChanged
	// readDirty reads only the manifests named, without listing Path:
	// after the watch saw them change.
	readDirty
)

// wait is how long Run may wait before its next timed step: the next full
// read, the next poll when not watching, or a manifest that has been
// written for maxWriteWait without being closed.
func (f *File) wait(r *fileRun) time.Duration {
	now := f.clock.Now()
	wait := f.period - now.Sub(r.last)
	if !r.armed && f.poll > 0 && f.poll < wait {
		wait = f.poll
	}
	for _, since := range r.writing {
		if d := since.Add(maxWriteWait).Sub(now); d < wait {
			wait = d
		}
	}
	return wait
}

// onTimer does what is due: when not watching, try to watch again; the full
// read; the manifests written for too long without being closed; and, when
// not watching, the poll.
func (f *File) onTimer(ctx context.Context, r *fileRun) {
	now := f.clock.Now()
	armed := !r.armed && r.w != nil && f.arm(r)
	if now.Sub(r.last) >= f.period {
		clear(r.writing)
		f.sync(ctx, r, readAll, nil)
		return
	}
	dirty := map[string]bool{}
	for p, since := range r.writing {
		if now.Sub(since) >= maxWriteWait {
			f.log.Debug("manifest still being written, reading it", "file", p)
			delete(r.writing, p)
			dirty[p] = true
		}
	}
	if armed {
		f.sync(ctx, r, readChanged, dirty) // what changed before the watch began
		return
	}
	if !r.armed && f.poll > 0 {
		if f.fingerprint() != r.fp {
			f.log.Debug("manifests changed")
			f.sync(ctx, r, readChanged, dirty)
			return
		}
	}
	if len(dirty) > 0 {
		f.sync(ctx, r, readDirty, dirty)
	}
}

// onWatch acts on a batch of the watch: manifests written and closed,
// renamed or removed are read at once (with Path listed again when Path
// itself changed, and everything read when events were lost); manifests
// still being written wait for their close, or maxWriteWait.
func (f *File) onWatch(ctx context.Context, r *fileRun, b watchBatch) {
	if b.err != nil {
		f.log.Warn("stopped watching static pod manifests, polling instead", "pollInterval", f.poll, "err", b.err)
		_ = r.w.Close()
		r.w, r.armed = nil, false
		clear(r.writing)
		f.sync(ctx, r, readChanged, nil)
		return
	}
	// A manifest removed and created again within the batch is removed
	// first: its pods leave, then come back (a static pod restarted, as
	// under upstream's kubelet), rather than the two events cancelling out.
	removed := false
	for p := range b.gone {
		removed = f.forget(p) || removed
	}
	if removed {
		select {
		case f.out <- syncloop.PodUpdate{Op: syncloop.OpSet, Source: syncloop.SourceFile, Pods: f.pods()}:
		case <-ctx.Done():
			return
		}
	}
	now := f.clock.Now()
	dirty := map[string]bool{} // true: read even if its stat is the same
	for p, op := range b.ops {
		switch op {
		case opWriting:
			if _, ok := r.writing[p]; !ok {
				r.writing[p] = now
			}
		case opAttrib:
			if _, ok := r.writing[p]; !ok {
				dirty[p] = false
			}
		case opChanged:
			delete(r.writing, p)
			dirty[p] = true
		}
	}
	_, self := dirty[f.path]
	switch {
	case b.overflow:
		f.log.Info("inotify dropped events, reading every manifest")
		clear(r.writing)
		f.arm(r)
		f.sync(ctx, r, readAll, nil)
	case b.rescan || self:
		f.arm(r)
		f.sync(ctx, r, readChanged, dirty)
	case len(dirty) > 0:
		f.sync(ctx, r, readDirty, dirty)
	}
}

// arm places the watches for Path as it is now, logs when that changes
// whether it is watched, and reports whether it just became watched.
func (f *File) arm(r *fileRun) bool {
	if r.w == nil {
		return false
	}
	was := r.armed
	ok, err := r.w.Arm()
	r.armed = ok
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if ok == was && msg == r.armErr {
		return false
	}
	r.armErr = msg
	switch {
	case !ok:
		f.log.Info("cannot watch static pod manifests now, polling", "pollInterval", f.poll, "err", err)
	case !was:
		f.log.Info("static pod manifests watched again")
	}
	return ok && !was
}

// sync reads and sends the SET; a readDirty that changed nothing sends
// nothing. While polling it first takes the fingerprint that the next poll
// compares with, so that a change during the read is seen.
func (f *File) sync(ctx context.Context, r *fileRun, kind readKind, dirty map[string]bool) {
	if !r.armed {
		r.fp = f.fingerprint()
	}
	if kind == readAll {
		r.last = f.clock.Now()
	}
	var pods []*v1.Pod
	var err error
	if kind == readDirty {
		var changed bool
		if pods, changed = f.readDirty(dirty); !changed {
			return
		}
	} else {
		pods, err = f.read(kind == readAll, dirty, r.writing)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			f.reportPath(err)
			return
		}
		f.reportPath(err)
	}
	select {
	case f.out <- syncloop.PodUpdate{Op: syncloop.OpSet, Source: syncloop.SourceFile, Pods: pods}:
	case <-ctx.Done():
	}
}

// reportPath logs a problem with Path itself when it changes.
func (f *File) reportPath(err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if msg == f.pathErr {
		return
	}
	f.pathErr = msg
	if err != nil {
		f.log.Warn("cannot read static pod manifests", "err", err)
	}
}

// Read reads every manifest once, reporting those that cannot be used, and
// returns the pods of the others in the order of their file names. It is
// what Run does every period. The error is about Path itself: it wraps
// fs.ErrNotExist when Path does not exist (and then pods is empty, not
// nil); otherwise pods is nil. Read must not be called concurrently with
// Run.
func (f *File) Read() ([]*v1.Pod, error) { return f.read(true, nil, nil) }

// read lists Path and reads the manifests: every one with full, otherwise
// those whose size, modification time or mode changed since they were last
// read and those in dirty, the others giving the same pods as then (the
// same pointers, which the merger then need not compare). Unless full, a
// manifest being written (in writing) is not read: it keeps what it gave
// before, if anything.
func (f *File) read(full bool, dirty map[string]bool, writing map[string]time.Time) ([]*v1.Pod, error) {
	st, err := os.Stat(f.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			f.forgetExcept(nil)
			return []*v1.Pod{}, fmt.Errorf("read manifests %s: path does not exist: %w", f.path, err)
		}
		return nil, fmt.Errorf("read manifests: %w", err)
	}
	if st.Mode().IsRegular() {
		f.forgetExcept(map[string]bool{f.path: true})
		f.refresh(f.path, st, full || dirty[f.path])
		return f.pods(), nil
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("read manifests %s: not a directory or a regular file", f.path)
	}
	entries, err := os.ReadDir(f.path)
	if err != nil {
		return nil, fmt.Errorf("read manifests: %w", err)
	}
	present := make(map[string]bool, len(entries))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(f.path, e.Name())
		if _, ok := writing[p]; ok && !full {
			if _, known := f.cache[p]; known {
				present[p] = true
			}
			continue
		}
		st, err := os.Stat(p)
		switch {
		case err != nil:
			f.log.Debug("cannot stat manifest", "file", p, "err", err)
		case st.IsDir():
			f.log.Debug("not recursing into manifest directory", "file", p)
		case !st.Mode().IsRegular():
			f.log.Debug("manifest is not a regular file", "file", p, "mode", st.Mode().String())
		default:
			present[p] = true
			f.refresh(p, st, full || dirty[p])
		}
	}
	f.forgetExcept(present)
	return f.pods(), nil
}

// readDirty reads the manifests of the directory named in dirty (true: even
// if their stat is the same), without listing it, and forgets those that are
// gone or no longer regular files. It reports whether anything changed, and
// then returns the pods of every manifest.
func (f *File) readDirty(dirty map[string]bool) ([]*v1.Pod, bool) {
	changed := false
	for p, force := range dirty {
		st, err := os.Stat(p)
		if err == nil && st.Mode().IsRegular() {
			changed = f.refresh(p, st, force) || changed
			continue
		}
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			f.log.Debug("cannot stat manifest", "file", p, "err", err)
		}
		changed = f.forget(p) || changed
	}
	if !changed {
		return nil, false
	}
	return f.pods(), true
}

// pods returns the pods of every known manifest in the order of their
// paths (file-name order): a manifest's last pods, or none (its last good
// ones with KeepLastGood) when it cannot be used.
func (f *File) pods() []*v1.Pod {
	paths := make([]string, 0, len(f.cache))
	for p := range f.cache {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	pods := []*v1.Pod{}
	for _, p := range paths {
		if c := f.cache[p]; c.err == nil {
			pods = append(pods, c.pods...)
		} else if f.keep {
			pods = append(pods, f.lastGood[p]...)
		}
	}
	return pods
}

// refresh reads the manifest at p if force, or if it was not read before or
// its size, modification time or mode changed since, and reports whether it
// read it. A manifest that cannot be used is reported (logged, an event,
// Errors), once per distinct error.
func (f *File) refresh(p string, st fs.FileInfo, force bool) bool {
	c, ok := f.cache[p]
	if !force && ok && c.size == st.Size() && c.mtime.Equal(st.ModTime()) && c.mode == st.Mode() {
		return false
	}
	var warnings []string
	warnings, c.pods, c.err = readManifestFile(p, f.node, f.refs)
	if c.err == nil {
		// Logged when they change: a periodic read of the same file logs
		// nothing new.
		if w := strings.Join(warnings, "; "); w != c.warnings {
			c.warnings = w
			if w != "" {
				f.log.Warn("static pod manifest has fields or documents that are not read", "file", p, "warnings", w)
			}
		}
	}
	c.size, c.mtime, c.mode = st.Size(), st.ModTime(), st.Mode()
	f.cache[p] = c
	if c.err != nil {
		f.report(p, c.err)
		return true
	}
	f.mu.Lock()
	prev, had := f.errs[p]
	delete(f.errs, p)
	f.mu.Unlock()
	if had {
		f.log.Info("manifest is valid again", "file", p, "previousErr", prev)
	}
	if f.keep {
		f.lastGood[p] = c.pods
	}
	return true
}

// readManifestFile reads and decodes the manifest at p; it returns the
// manifest's warnings (ManifestWarnings) beside the pods.
func readManifestFile(p, node string, allowAPIReferences bool) ([]string, []*v1.Pod, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxManifestBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if len(data) > MaxManifestBytes {
		return nil, nil, fmt.Errorf("larger than %d bytes", MaxManifestBytes)
	}
	pods, warnings, err := readManifest(data, syncloop.SourceFile, p, node, allowAPIReferences)
	return warnings, pods, err
}

// report records a manifest's error, and logs it and makes an event when it
// is new.
func (f *File) report(p string, err error) {
	err = fmt.Errorf("manifest %s: %w", p, err)
	f.mu.Lock()
	prev, had := f.errs[p]
	f.errs[p] = err
	f.mu.Unlock()
	if had && prev.Error() == err.Error() {
		return
	}
	f.log.Warn("ignoring static pod manifest", "file", p, "err", err)
	f.rec.Eventf(f.nodeRef, v1.EventTypeWarning, ReasonFailedValidation, "Error reading static pod %v", err)
}

// forgetExcept forgets the manifests that are gone; present nil means all
// are gone.
func (f *File) forgetExcept(present map[string]bool) {
	for p := range f.cache {
		if !present[p] {
			f.forget(p)
		}
	}
}

// forget drops what is known of the manifest at p (its pods, error and last
// good pods) and reports whether anything was.
func (f *File) forget(p string) bool {
	f.mu.Lock()
	_, hadErr := f.errs[p]
	delete(f.errs, p)
	f.mu.Unlock()
	_, known := f.cache[p]
	delete(f.cache, p)
	delete(f.lastGood, p)
	return known || hadErr
}

// readResult is what reading a manifest gave, with the stat it had.
type readResult struct {
	size  int64
	mtime time.Time
	mode  fs.FileMode
	pods  []*v1.Pod
	err   error
	// warnings are ManifestWarnings' of the content last read, logged
	// when they change.
	warnings string
}

// fingerprint hashes what a poll compares: for each entry of the directory
// that is not hidden (or of the file) its name, size, modification time and
// mode. It costs one directory read and one stat per file, no file read.
func (f *File) fingerprint() uint64 {
	h := fnv.New64a()
	var buf []byte
	add := func(name string, st fs.FileInfo) {
		buf = append(buf[:0], name...)
		buf = binary.LittleEndian.AppendUint64(append(buf, 0), uint64(st.Size()))
		buf = binary.LittleEndian.AppendUint64(buf, uint64(st.ModTime().UnixNano()))
		buf = binary.LittleEndian.AppendUint32(buf, uint32(st.Mode()))
		_, _ = h.Write(buf)
	}
	st, err := os.Stat(f.path)
	if err != nil {
		fmt.Fprintf(h, "error %v", err)
		return h.Sum64()
	}
	if !st.IsDir() {
		add(f.path, st)
		return h.Sum64()
	}
	// Not the directory's own modification time: adding a hidden file
	// changes it.
	fmt.Fprintf(h, "dir\x00")
	entries, err := os.ReadDir(f.path)
	if err != nil {
		fmt.Fprintf(h, "error %v", err)
		return h.Sum64()
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if st, err := os.Stat(filepath.Join(f.path, e.Name())); err == nil {
			add(e.Name(), st)
		} else {
			fmt.Fprintf(h, "%s\x00error\x00", e.Name())
		}
	}
	return h.Sum64()
}
