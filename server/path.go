package server

import (
	"fmt"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"
	"k8s.io/apimachinery/pkg/types"
)

// podPath is what the path of a per-pod endpoint names, each part a valid
// path segment: the namespace, the pod's name, the pod's UID when the path
// gives one, and the container for the endpoints that take one.
type podPath struct {
	namespace string
	pod       string
	uid       types.UID
	container string
}

// pathShape says which segments follow an endpoint's prefix.
type pathShape int

const (
	// logsShape is {podNamespace}/{podID}/{containerName}.
	logsShape pathShape = iota
	// containerShape is {podNamespace}/{podID}[/{uid}]/{containerName}.
	containerShape
	// podShape is {podNamespace}/{podID}[/{uid}].
	podShape
)

// errNoRoute means the path has not the shape of the endpoint's: there is
// no such path (404).
var errNoRoute = fmt.Errorf("no such path")

// pathError is a segment that is empty, badly escaped or not a valid path
// segment name, named by upstream's path parameter name (400).
type pathError struct {
	field string
	value string
	msgs  []string
	// badName is set for a segment that unescapes to something no object
	// can be named ("..", "a/b"): upstream's router finds no route or no
	// such object for it, and answers 404.
	badName bool
}

func (e *pathError) Error() string {
	if e.value == "" && len(e.msgs) == 0 {
		return fmt.Sprintf(`{"message": "Missing %s."}`, e.field)
	}
	return fmt.Sprintf("invalid %s %q: %s", e.field, e.value, strings.Join(e.msgs, ", "))
}

// parsePodPath parses the escaped remainder of a path after an endpoint's
// prefix (r.URL.EscapedPath() less "/exec/", say). Each segment is
// unescaped and must then be a valid path segment name, as the API server
// validates names in paths: never empty, ".", "..", nor containing "/" or
// "%", so that an encoded slash or a dot segment never reaches a handler
// as a name.
func parsePodPath(escaped string, shape pathShape) (podPath, error) {
	segs := strings.Split(escaped, "/")
	var names []string
	switch {
	case shape == logsShape && len(segs) == 3:
		names = []string{"podNamespace", "podID", "containerName"}
	case shape == containerShape && len(segs) == 3:
		names = []string{"podNamespace", "podID", "containerName"}
	case shape == containerShape && len(segs) == 4:
		names = []string{"podNamespace", "podID", "uid", "containerName"}
	case shape == podShape && len(segs) == 2:
		names = []string{"podNamespace", "podID"}
	case shape == podShape && len(segs) == 3:
		names = []string{"podNamespace", "podID", "uid"}
	default:
		return podPath{}, errNoRoute
	}
	var p podPath
	for i, name := range names {
		v, err := url.PathUnescape(segs[i])
		if err != nil {
			return podPath{}, &pathError{field: name, value: segs[i], msgs: []string{"invalid escape"}}
		}
		if v == "" {
			return podPath{}, &pathError{field: name}
		}
		if msgs := content.IsPathSegmentName(v); len(msgs) > 0 {
			return podPath{}, &pathError{field: name, value: v, msgs: msgs, badName: true}
		}
		switch name {
		case "podNamespace":
			p.namespace = v
		case "podID":
			p.pod = v
		case "uid":
			p.uid = types.UID(v)
		case "containerName":
			p.container = v
		}
	}
	return p, nil
}
