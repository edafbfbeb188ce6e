package server

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"
)

// componentName is how /statusz and /flagz name the component: the
// kubelet API is the kubelet's.
const componentName = "kubelet"

// ZPages describe the component for /statusz and /flagz (upstream's
// ComponentStatusz and ComponentFlagz, beta and on in 1.36): when it
// started, its versions and its flags.
type ZPages struct {
	// StartTime is when the component started (/statusz's "Started"; the
	// uptime is counted from it on Clock). Zero means when New ran.
	StartTime time.Time
	// Clock gives the uptime. Nil means the real clock.
	Clock clock.PassiveClock
	// BinaryVersion is the component's version ("1.36.3"). Empty means
	// "0.0.0".
	BinaryVersion string
	// EmulationVersion is the Kubernetes version the component emulates
	// ("1.36"); upstream kubelet reports its binary's major.minor. Empty
	// leaves it out, as upstream's registry without an effective version.
	EmulationVersion string
	// GoVersion is the Go the binary was built with. Empty means
	// runtime.Version().
	GoVersion string
	// Flags, when set, serves /flagz: the component's command-line flags.
	// Nil: no /flagz (404), as upstream kubelet without a flag reader.
	Flags FlagReader
	// Delimiter separates a name from its value in the text answers. Empty
	// means one of ":", ": ", "=" and " " chosen at random for each
	// answer, as upstream does so that nobody parses them; tests set one.
	Delimiter string
}

// FlagReader gives the component's flags for /flagz, name to value, as
// upstream's flagz.Reader. A value that must not be shown (a secret)
// should be given as "CLASSIFIED", what upstream writes for the flags it
// marks classified. Called on the first text request and on every
// structured one, from the request's goroutine.
type FlagReader interface {
	Flagz() map[string]string
}

// FlagReaderFunc adapts a function to FlagReader.
type FlagReaderFunc func() map[string]string

var _ FlagReader = FlagReaderFunc(nil)

// Flagz calls f.
func (f FlagReaderFunc) Flagz() map[string]string { return f() }

// FlagSetReader reads every flag defined in a flag.FlagSet, set or not,
// with its current value (Value.String()), as upstream reads its named
// flag sets. Those named in Classified are given as "CLASSIFIED".
type FlagSetReader struct {
	FlagSet    *flag.FlagSet
	Classified []string
}

var _ FlagReader = FlagSetReader{}

// Flagz returns the flag set's flags.
func (r FlagSetReader) Flagz() map[string]string {
	out := map[string]string{}
	if r.FlagSet == nil {
		return out
	}
	r.FlagSet.VisitAll(func(f *flag.Flag) {
		if f.Value == nil {
			return
		}
		v := f.Value.String()
		if slices.Contains(r.Classified, f.Name) {
			v = "CLASSIFIED"
		}
		out[f.Name] = v
	})
	return out
}

// zpages serves /statusz and /flagz.
type zpages struct {
	o     ZPages
	clock clock.PassiveClock
	paths []string // the top-level paths /statusz lists

	// The text of /flagz is made once, as upstream caches it: the flags
	// of a running component do not change.
	flagzOnce sync.Once
	flagzText []byte
}

// newZPages fills o's defaults; paths are the paths the server serves.
func newZPages(o ZPages, paths []string) *zpages {
	z := &zpages{o: o, clock: o.Clock}
	if z.clock == nil {
		z.clock = clock.RealClock{}
	}
	if z.o.StartTime.IsZero() {
		z.o.StartTime = z.clock.Now()
	}
	if z.o.BinaryVersion == "" {
		z.o.BinaryVersion = "0.0.0"
	}
	if z.o.GoVersion == "" {
		z.o.GoVersion = runtime.Version()
	}
	z.paths = topLevelPaths(paths)
	return z
}

// topLevelPaths are the first segments of paths, each once, sorted, as
// upstream's statusz lists the paths registered before it.
func topLevelPaths(paths []string) []string {
	var out []string
	for _, p := range paths {
		first, _, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/")
		if first == "" || slices.Contains(out, "/"+first) {
			continue
		}
		out = append(out, "/"+first)
	}
	slices.Sort(out)
	return out
}

// zpageDelimiters are upstream's delimiters of the text answers.
var zpageDelimiters = [...]string{":", ": ", "=", " "}

func (z *zpages) delimiter() string {
	if z.o.Delimiter != "" {
		return z.o.Delimiter
	}
	return zpageDelimiters[rand.IntN(len(zpageDelimiters))]
}

// zpageHeader is the header of the text answers: a blank line, the
// component and page, and upstream's warning.
func zpageHeader(page string) string {
	return "\n" + componentName + " " + page + "\n" +
		"Warning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.\n"
}

// statuszBody is upstream's Statusz (config.k8s.io v1alpha1 and v1beta1
// have the same fields).
type statuszBody struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	StartTime         metav1.Time `json:"startTime"`
	UptimeSeconds     int64       `json:"uptimeSeconds"`
	GoVersion         string      `json:"goVersion"`
	BinaryVersion     string      `json:"binaryVersion"`
	EmulationVersion  string      `json:"emulationVersion,omitempty"`
	Paths             []string    `json:"paths"`
}

// flagzBody is upstream's Flagz (v1alpha1 and v1beta1 alike).
type flagzBody struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Flags             map[string]string `json:"flags,omitempty"`
}

// zpageKinds are the structured answers a zpage can give.
var zpageKinds = map[string][]string{"Statusz": {"v1alpha1", "v1beta1"}, "Flagz": {"v1alpha1", "v1beta1"}}

// zpageGroup is the API group of the structured answers.
const zpageGroup = "config.k8s.io"

func (z *zpages) statusz(version string) *statuszBody {
	// Upstream reads the process's start time in whole seconds.
	start := z.o.StartTime.Truncate(time.Second)
	return &statuszBody{
		TypeMeta:   metav1.TypeMeta{Kind: "Statusz", APIVersion: zpageGroup + "/" + version},
		ObjectMeta: metav1.ObjectMeta{Name: componentName},
		StartTime:  metav1.NewTime(start), UptimeSeconds: int64(z.clock.Since(start).Seconds()),
		GoVersion: z.o.GoVersion, BinaryVersion: z.o.BinaryVersion, EmulationVersion: z.o.EmulationVersion,
		Paths: z.paths,
	}
}

// statuszText is /statusz as text: the header, then a blank line and a
// line per field; an emulation version or paths left out leave their line
// empty, as upstream's.
func (z *zpages) statuszText() []byte {
	d := z.delimiter()
	start := z.o.StartTime.Truncate(time.Second)
	up := int64(max(0, z.clock.Since(start)).Seconds())
	var b bytes.Buffer
	b.WriteString(zpageHeader("statusz"))
	fmt.Fprintf(&b, "\nStarted%s %s\n", d, start.Format(time.UnixDate))
	fmt.Fprintf(&b, "Up%s %d hr %02d min %02d sec\n", d, up/3600, up/60%60, up%60)
	fmt.Fprintf(&b, "Go version%s %s\n", d, z.o.GoVersion)
	fmt.Fprintf(&b, "Binary version%s %s\n", d, z.o.BinaryVersion)
	if z.o.EmulationVersion != "" {
		fmt.Fprintf(&b, "Emulation version%s %s", d, z.o.EmulationVersion)
	}
	b.WriteString("\n")
	if len(z.paths) > 0 {
		fmt.Fprintf(&b, "Paths%s %s", d, strings.Join(z.paths, " "))
	}
	b.WriteString("\n")
	return b.Bytes()
}

func (z *zpages) flagz(version string) *flagzBody {
	return &flagzBody{
		TypeMeta:   metav1.TypeMeta{Kind: "Flagz", APIVersion: zpageGroup + "/" + version},
		ObjectMeta: metav1.ObjectMeta{Name: componentName},
		Flags:      z.o.Flags.Flagz(),
	}
}

// flagzText is /flagz as text: the header, then "name<delimiter>value"
// per flag, sorted by name; made once.
func (z *zpages) flagzTextOnce() []byte {
	z.flagzOnce.Do(func() {
		d := z.delimiter()
		flags := z.o.Flags.Flagz()
		var b bytes.Buffer
		b.WriteString(zpageHeader("flagz"))
		for _, name := range slices.Sorted(maps.Keys(flags)) {
			fmt.Fprintf(&b, "%s%s%s\n", name, d, flags[name])
		}
		z.flagzText = b.Bytes()
	})
	return z.flagzText
}

func (s *Server) serveStatusz(w http.ResponseWriter, r *http.Request) {
	s.serveZPage(w, r, "Statusz", s.zpages.statuszText, func(v string) any { return s.zpages.statusz(v) })
}

func (s *Server) serveFlagz(w http.ResponseWriter, r *http.Request) {
	s.serveZPage(w, r, "Flagz", s.zpages.flagzTextOnce, func(v string) any { return s.zpages.flagz(v) })
}

// serveZPage answers a zpage as upstream: text/plain without an Accept
// header or when it accepts text/plain (or */*) without a conversion;
// JSON or YAML of the kind when it asks for one by its group, version and
// kind ("application/json;g=config.k8s.io;v=v1beta1;as=Statusz"), with a
// deprecation warning for v1alpha1; else 406 with a Status.
func (s *Server) serveZPage(w http.ResponseWriter, r *http.Request, kind string, text func() []byte, object func(version string) any) {
	accept := r.Header.Get("Accept")
	if strings.TrimSpace(accept) == "" {
		writeZPageText(w, text())
		return
	}
	m, ok := negotiateZPage(accept, kind)
	if !ok {
		s.writeNotAcceptable(w, r, accept)
		return
	}
	if m.mediaType == mediaText {
		writeZPageText(w, text())
		return
	}
	if m.version == "v1alpha1" {
		w.Header().Set("Warning", `299 - "This version of the `+strings.ToLower(kind)+` endpoint is deprecated. Please use a newer version."`)
	}
	contentType := m.mediaType + ";g=" + zpageGroup + ";v=" + m.version + ";as=" + kind
	s.writeAPIObject(w, r, contentType, m.mediaType, m.pretty, http.StatusOK, object(m.version))
}

func writeZPageText(w http.ResponseWriter, b []byte) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(b)
}

// The media types a zpage answers in, in upstream's order (its codec
// factory's JSON and YAML, then its text serializer; protobuf left out,
// CBOR only behind an API server gate that is off).
const (
	mediaJSON = "application/json"
	mediaYAML = "application/yaml"
	mediaText = "text/plain"
)

var zpageMediaTypes = []string{mediaJSON, mediaYAML, mediaText}

// zpageMedia is what a request negotiated.
type zpageMedia struct {
	mediaType string
	version   string // of a structured answer
	pretty    bool   // pretty=1 in the Accept clause
}

// acceptClause is one media range of an Accept header.
type acceptClause struct {
	typ, sub string
	q        float64
	params   map[string]string
}

// parseAccept splits an Accept header into its media ranges, the most
// wanted first: by quality, then a type before a wildcard, keeping the
// header's order otherwise.
func parseAccept(header string) []acceptClause {
	var out []acceptClause
	for part := range strings.SplitSeq(header, ",") {
		fields := strings.Split(part, ";")
		typ, sub, ok := strings.Cut(strings.TrimSpace(fields[0]), "/")
		if !ok {
			if typ != "*" {
				continue
			}
			sub = "*"
		}
		c := acceptClause{typ: strings.TrimSpace(typ), sub: strings.TrimSpace(sub), q: 1, params: map[string]string{}}
		for _, p := range fields[1:] {
			k, v, ok := strings.Cut(p, "=")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if k == "q" {
				// A quality that does not parse is 0, as goautoneg's.
				c.q, _ = strconv.ParseFloat(v, 32)
				continue
			}
			c.params[k] = v
		}
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b acceptClause) int {
		switch {
		case a.q > b.q:
			return -1
		case a.q < b.q:
			return 1
		case a.typ != "*" && b.typ == "*", a.sub != "*" && b.sub == "*":
			return -1
		case a.typ == "*" && b.typ != "*", a.sub == "*" && b.sub != "*":
			return 1
		}
		return 0
	})
	return out
}

// negotiateZPage picks the first media range of accept that a zpage of
// kind can answer, as apiserver's content negotiation with the zpages'
// restrictions: text/plain only without a conversion, JSON and YAML only
// converted to a known group, version and kind; no streams, no server
// versions.
func negotiateZPage(accept, kind string) (zpageMedia, bool) {
	return negotiate(accept, func(mediaType string, conv *groupVersionKind) (string, bool) {
		if mediaType == mediaText {
			return "", conv == nil
		}
		if conv == nil || conv.group != zpageGroup || conv.kind != kind || !slices.Contains(zpageKinds[kind], conv.version) {
			return "", false
		}
		return conv.version, true
	})
}

// groupVersionKind is the conversion a media range asks for (g, v, as).
type groupVersionKind struct{ group, version, kind string }

// negotiate finds the first media range of accept and media type that
// allow says it can answer.
func negotiate(accept string, allow func(mediaType string, conv *groupVersionKind) (string, bool)) (zpageMedia, bool) {
	for _, c := range parseAccept(accept) {
		for _, mt := range zpageMediaTypes {
			typ, sub, _ := strings.Cut(mt, "/")
			if !(c.typ == typ && (c.sub == sub || c.sub == "*")) && !(c.typ == "*" && c.sub == "*") {
				continue
			}
			m := zpageMedia{mediaType: mt}
			var conv *groupVersionKind
			usable := true
			for k, v := range c.params {
				switch k {
				case "as", "g", "v":
					if conv == nil {
						conv = &groupVersionKind{}
					}
					switch k {
					case "as":
						conv.kind = v
					case "g":
						conv.group = v
					default:
						conv.version = v
					}
				case "stream", "sv":
					// No zpage streams or serves another version.
					usable = usable && v == ""
				case "pretty":
					m.pretty = v == "1"
				}
			}
			if !usable {
				continue
			}
			if m.version, usable = allow(mt, conv); usable {
				return m, true
			}
		}
	}
	return zpageMedia{}, false
}

// writeNotAcceptable answers 406 with upstream's Status, "only the
// following media types are accepted: ...": encoded as the Accept header
// allows it without a conversion (JSON or YAML), else as indented JSON.
func (s *Server) writeNotAcceptable(w http.ResponseWriter, r *http.Request, accept string) {
	status := &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  "only the following media types are accepted: " + strings.Join(zpageMediaTypes, ", "),
		Reason:   metav1.StatusReasonNotAcceptable,
		Code:     http.StatusNotAcceptable,
	}
	m, ok := negotiate(accept, func(mediaType string, conv *groupVersionKind) (string, bool) {
		return "", conv == nil && mediaType != mediaText
	})
	if !ok {
		b, _ := json.MarshalIndent(status, "", "  ")
		w.Header().Set("Content-Type", mediaJSON)
		w.WriteHeader(http.StatusNotAcceptable)
		_, _ = w.Write(b)
		return
	}
	s.writeAPIObject(w, r, m.mediaType, m.mediaType, m.pretty, http.StatusNotAcceptable, status)
}

// writeAPIObject writes v as apimachinery's serializers would: JSON on
// one line with a newline, indented when the request asks for it pretty
// (pretty=1 in the Accept clause, ?pretty=true, or curl, Wget or a
// browser as the user agent); YAML.
func (s *Server) writeAPIObject(w http.ResponseWriter, r *http.Request, contentType, mediaType string, pretty bool, code int, v any) {
	var b []byte
	var err error
	switch {
	case mediaType == mediaYAML:
		b, err = yaml.Marshal(v)
	case pretty || prettyRequest(r):
		b, err = json.MarshalIndent(v, "", "  ")
	default:
		b, err = json.Marshal(v)
		b = append(b, '\n')
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(code)
	if _, err := w.Write(b); err != nil {
		s.log.Warn("Failed to write a response", "path", r.URL.Path, "err", err)
	}
}

// prettyRequest is apiserver's isPrettyPrint: ?pretty=<true>, or a
// client people read the answer of.
func prettyRequest(r *http.Request) bool {
	if q := r.URL.Query().Get("pretty"); q != "" {
		pretty, _ := strconv.ParseBool(q)
		return pretty
	}
	ua := r.UserAgent()
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget") || strings.HasPrefix(ua, "Mozilla/5.0")
}
