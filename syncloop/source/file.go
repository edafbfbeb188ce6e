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
	// (names, sizes, modification times and modes of the files) between
	// full reads; a change makes a full read at once (1s). Negative
	// disables polling.
	PollInterval time.Duration
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
// all at once and then every Period, and within PollInterval of a change it
// reads the files whose size, modification time or mode changed; each time
// it sends a SET with the pods of every valid manifest, prepared by
// ReadManifest. The pods of a manifest that was not read again are the same
// pointers as in the previous SET, which the merger takes as unchanged
// without comparing them.
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
// whenever a poll sees a change. It returns nil when ctx ends; it starts no
// goroutine. A send waits for the receiver until ctx ends.
func (f *File) Run(ctx context.Context) error {
	f.log.Info("watching static pod manifests", "period", f.period, "pollInterval", f.poll)
	fp := f.sync(ctx, true)
	last := f.clock.Now()
	for {
		wait := f.period - f.clock.Since(last)
		if f.poll > 0 && f.poll < wait {
			wait = f.poll
		}
		t := f.clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
		if f.clock.Since(last) >= f.period {
			fp = f.sync(ctx, true)
			last = f.clock.Now()
			continue
		}
		if now := f.fingerprint(); now != fp {
			f.log.Debug("manifests changed")
			fp = f.sync(ctx, false)
		}
	}
}

// sync reads (everything, or with full false only the files whose stat
// changed), sends the SET, and returns the fingerprint taken before reading
// (so that a change during the read is seen by the next poll).
func (f *File) sync(ctx context.Context, full bool) uint64 {
	fp := f.fingerprint()
	pods, err := f.read(full)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		f.reportPath(err)
		return fp
	}
	f.reportPath(err)
	select {
	case f.out <- syncloop.PodUpdate{Op: syncloop.OpSet, Source: syncloop.SourceFile, Pods: pods}:
	case <-ctx.Done():
	}
	return fp
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
func (f *File) Read() ([]*v1.Pod, error) { return f.read(true) }

// read reads the manifests: every one with full, otherwise only those whose
// size, modification time or mode changed since they were last read, the
// others giving the same pods as then (the same pointers, which the merger
// then need not compare).
func (f *File) read(full bool) ([]*v1.Pod, error) {
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
		return f.readFile(f.path, st, full), nil
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("read manifests %s: not a directory or a regular file", f.path)
	}
	entries, err := os.ReadDir(f.path)
	if err != nil {
		return nil, fmt.Errorf("read manifests: %w", err)
	}
	pods := []*v1.Pod{}
	present := make(map[string]bool, len(entries))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(f.path, e.Name())
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
			pods = append(pods, f.readFile(p, st, full)...)
		}
	}
	f.forgetExcept(present)
	return pods, nil
}

// readFile returns the pods of one manifest, or none (or its last good ones
// with KeepLastGood) after reporting why. Unless full, a manifest whose stat
// is what it was when it was last read is not read again.
func (f *File) readFile(p string, st fs.FileInfo, full bool) []*v1.Pod {
	c, ok := f.cache[p]
	if full || !ok || c.size != st.Size() || !c.mtime.Equal(st.ModTime()) || c.mode != st.Mode() {
		c.pods, c.err = readManifestFile(p, f.node, f.refs)
		c.size, c.mtime, c.mode = st.Size(), st.ModTime(), st.Mode()
		f.cache[p] = c
	}
	pods, err := c.pods, c.err
	if err != nil {
		f.report(p, err)
		if f.keep {
			return f.lastGood[p]
		}
		return nil
	}
	f.mu.Lock()
	prev, had := f.errs[p]
	delete(f.errs, p)
	f.mu.Unlock()
	if had {
		f.log.Info("manifest is valid again", "file", p, "previousErr", prev)
	}
	if f.keep {
		f.lastGood[p] = pods
	}
	return pods
}

func readManifestFile(p, node string, allowAPIReferences bool) ([]*v1.Pod, error) {
	fh, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxManifestBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("larger than %d bytes", MaxManifestBytes)
	}
	return readManifest(data, syncloop.SourceFile, p, node, allowAPIReferences)
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

// forgetExcept drops the errors and last good pods of manifests that are
// gone; present nil means all are gone.
func (f *File) forgetExcept(present map[string]bool) {
	f.mu.Lock()
	for p := range f.errs {
		if !present[p] {
			delete(f.errs, p)
		}
	}
	f.mu.Unlock()
	for p := range f.lastGood {
		if !present[p] {
			delete(f.lastGood, p)
		}
	}
	for p := range f.cache {
		if !present[p] {
			delete(f.cache, p)
		}
	}
}

// readResult is what reading a manifest gave, with the stat it had.
type readResult struct {
	size  int64
	mtime time.Time
	mode  fs.FileMode
	pods  []*v1.Pod
	err   error
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
