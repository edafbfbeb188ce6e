package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubeletkit/kubeletkit/syncloop"
)

// DefaultURLTimeout is the timeout of the URL source's default HTTP client
// (upstream's 10s).
const DefaultURLTimeout = 10 * time.Second

// URLOptions configure a URL source.
type URLOptions struct {
	// URL serves a v1.Pod or a v1.PodList, YAML or JSON; http or https.
	// Required.
	URL string
	// Header is sent with every request (upstream's
	// --manifest-url-header). Its values are never logged.
	Header http.Header
	// NodeName is the node's name: it suffixes the pods' names. Required.
	NodeName string
	// Out receives the source's messages, each a SET with all its pods:
	// usually Config.Channel(ctx, syncloop.SourceHTTP). Required.
	Out chan<- syncloop.PodUpdate
	// Period is the time between the end of a fetch and the next (20s).
	Period time.Duration
	// AllowAPIReferences accepts pods that reference API objects, as
	// FileOptions.AllowAPIReferences.
	AllowAPIReferences bool
	// Client makes the requests; nil means a client with a 10s timeout.
	Client *http.Client
	// Clock drives the period; nil means the real clock.
	Clock clock.Clock
	// Logger receives the source's logs; nil discards them.
	Logger *slog.Logger
	// Recorder receives a Warning FailedValidation event, on the node, when
	// a response cannot be decoded or a pod in it is invalid (once per
	// distinct error); nil means none.
	Recorder EventRecorder
}

// URL is the manifest URL source: Run fetches the URL at once and then
// every Period, and sends a SET with the pods of the response, prepared by
// ReadManifest (a pod list is all or nothing).
//
// As upstream: a response other than 200 OK, a transport error, an
// undecodable body or an invalid pod is logged (at Warn the first three
// times in a row, then at Debug, and at Info when a fetch works again) and
// sends nothing, so the source's pods stay as they were; an empty body sends
// an empty SET (the source is then "seen") and is logged as an error.
// Unlike upstream, an unchanged body sends its SET again (upstream sends
// nothing), which costs the merger a comparison and lets it reconsider a
// pod it refused for a name another source held. Bodies over
// MaxManifestBytes (10 MiB) are refused. The URL's password and the headers
// are never logged.
type URL struct {
	url      string
	redacted string
	header   http.Header
	node     string
	refs     bool
	out      chan<- syncloop.PodUpdate
	period   time.Duration
	client   *http.Client
	clock    clock.Clock
	log      *slog.Logger
	rec      EventRecorder
	nodeRef  *v1.ObjectReference

	data     []byte    // the last body
	pods     []*v1.Pod // its pods, when it was valid
	dataErr  error     // why it was not
	failures int       // fetches failed in a row
}

// NewURL returns a URL source. It starts nothing; Run does. It fails,
// wrapping ErrInvalidOptions, when URL is missing or not an absolute http(s)
// URL, when NodeName or Out is missing, or when Period is negative.
func NewURL(opts URLOptions) (*URL, error) {
	var errs []error
	var redacted string
	if opts.URL == "" {
		errs = append(errs, errors.New("url is required"))
	} else if u, err := url.Parse(opts.URL); err != nil {
		errs = append(errs, fmt.Errorf("url: %w", err))
	} else if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		errs = append(errs, fmt.Errorf("url %q is not an absolute http or https URL", u.Redacted()))
	} else {
		redacted = u.Redacted()
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
		return nil, fmt.Errorf("source: new url: %w: %w", ErrInvalidOptions, err)
	}
	u := &URL{
		url:      opts.URL,
		redacted: redacted,
		header:   opts.Header.Clone(),
		node:     opts.NodeName,
		refs:     opts.AllowAPIReferences,
		out:      opts.Out,
		period:   opts.Period,
		client:   opts.Client,
		clock:    opts.Clock,
		log:      orDiscard(opts.Logger).With("url", redacted),
		rec:      orNopRecorder(opts.Recorder),
		nodeRef:  &v1.ObjectReference{Kind: "Node", Name: opts.NodeName, UID: types.UID(opts.NodeName)},
	}
	if u.period == 0 {
		u.period = DefaultPeriod
	}
	if u.client == nil {
		u.client = &http.Client{Timeout: DefaultURLTimeout}
	}
	if u.clock == nil {
		u.clock = clock.RealClock{}
	}
	return u, nil
}

// Run fetches the URL and sends a SET at once, then Period after the end of
// each fetch. It returns nil when ctx ends, which also cancels a request in
// flight; it starts no goroutine. A send waits for the receiver until ctx
// ends.
func (u *URL) Run(ctx context.Context) error {
	u.log.Info("watching manifest URL", "period", u.period)
	for {
		u.run(ctx)
		t := u.clock.NewTimer(u.period)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
	}
}

// run fetches once and logs the outcome as upstream does.
func (u *URL) run(ctx context.Context) {
	err := u.Fetch(ctx)
	switch {
	case err == nil:
		if u.failures > 0 {
			u.log.Info("read pods from URL again", "failures", u.failures)
		}
		u.failures = 0
		return
	case ctx.Err() != nil:
		return
	case u.failures < 3:
		u.log.Warn("failed to read pods from URL", "err", err)
	case u.failures == 3:
		u.log.Warn("failed to read pods from URL; logging further failures at debug level", "err", err)
	default:
		u.log.Debug("failed to read pods from URL", "err", err)
	}
	u.failures++
}

// Fetch gets the URL once and sends a SET when it should, as Run does every
// period, and returns why it did not. Fetch must not be called concurrently
// with Run.
func (u *URL) Fetch(ctx context.Context) error {
	data, err := u.get(ctx)
	if err != nil {
		return err
	}
	if len(data) == 0 {
		u.data, u.pods, u.dataErr = nil, nil, nil
		u.send(ctx, []*v1.Pod{})
		return fmt.Errorf("get %s: zero-length data", u.redacted)
	}
	if !bytes.Equal(data, u.data) {
		u.data = data
		var w []string
		u.pods, w, u.dataErr = readManifest(data, syncloop.SourceHTTP, u.url, u.node, u.refs)
		if u.dataErr == nil && len(w) > 0 {
			u.log.Warn("static pod manifest has fields or documents that are not read", "url", u.redacted, "warnings", strings.Join(w, "; "))
		}
		if u.dataErr != nil {
			u.dataErr = fmt.Errorf("manifest from %s: %w", u.redacted, u.dataErr)
			u.rec.Eventf(u.nodeRef, v1.EventTypeWarning, ReasonFailedValidation, "Error reading static pod %v", u.dataErr)
		}
	}
	if u.dataErr != nil {
		return u.dataErr
	}
	u.send(ctx, u.pods)
	return nil
}

func (u *URL) get(ctx context.Context) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.url, nil)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", u.redacted, err)
	}
	if u.header != nil {
		req.Header = u.header.Clone()
	}
	resp, err := u.client.Do(req)
	if err != nil {
		return nil, err // *url.Error names the request, without the password
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("get %s: read body: %w", u.redacted, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("get %s: %s", u.redacted, resp.Status)
	}
	if len(data) > MaxManifestBytes {
		return nil, fmt.Errorf("get %s: response larger than %d bytes", u.redacted, MaxManifestBytes)
	}
	return data, nil
}

func (u *URL) send(ctx context.Context, pods []*v1.Pod) {
	select {
	case u.out <- syncloop.PodUpdate{Op: syncloop.OpSet, Source: syncloop.SourceHTTP, Pods: pods}:
	case <-ctx.Done():
	}
}
