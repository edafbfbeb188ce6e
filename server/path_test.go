package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/validate/content"
)

func TestParsePodPath(t *testing.T) {
	for _, tc := range []struct {
		path  string
		shape pathShape
		want  podPath
		err   string // "" for none, "404" for no route
	}{
		{"default/web/app", logsShape, podPath{namespace: "default", pod: "web", container: "app"}, ""},
		{"default/web/uid/app", logsShape, podPath{}, "404"},
		{"default/web/app", containerShape, podPath{namespace: "default", pod: "web", container: "app"}, ""},
		{"default/web/u-1/app", containerShape, podPath{namespace: "default", pod: "web", uid: "u-1", container: "app"}, ""},
		{"default/web", containerShape, podPath{}, "404"},
		{"default/web/u/app/x", containerShape, podPath{}, "404"},
		{"default/web", podShape, podPath{namespace: "default", pod: "web"}, ""},
		{"default/web/u-1", podShape, podPath{namespace: "default", pod: "web", uid: "u-1"}, ""},
		{"default/web/", podShape, podPath{}, `{"message": "Missing uid."}`},
		{"", podShape, podPath{}, "404"},
		{"default//app", logsShape, podPath{}, `{"message": "Missing podID."}`},
		{"/web/app", logsShape, podPath{}, `{"message": "Missing podNamespace."}`},
		{"default/web/", logsShape, podPath{}, `{"message": "Missing containerName."}`},
		{"default/../app", logsShape, podPath{}, `invalid podID "..": may not be '..'`},
		{"default/./app", logsShape, podPath{}, `invalid podID ".": may not be '.'`},
		{"default/%2e%2E/app", logsShape, podPath{}, `invalid podID "..": may not be '..'`},
		{"default/a%2Fb/app", logsShape, podPath{}, `invalid podID "a/b": may not contain '/'`},
		{"default/a%252Fb/app", logsShape, podPath{}, `invalid podID "a%2Fb": may not contain '%'`},
		{"default/a%zz/app", logsShape, podPath{}, `invalid podID "a%zz": invalid escape`},
		{"kube%2Dsystem/web/app", logsShape, podPath{namespace: "kube-system", pod: "web", container: "app"}, ""},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, err := parsePodPath(tc.path, tc.shape)
			switch tc.err {
			case "":
				assert.NoError(t, err)
				assert.Equal(t, tc.want, got)
			case "404":
				assert.ErrorIs(t, err, errNoRoute)
			default:
				assert.EqualError(t, err, tc.err)
			}
		})
	}
}

// Whatever the path, a name parsePodPath returns is a valid path segment:
// never empty, ".", "..", nor holding "/" or "%" (an encoded slash or dot
// segment never reaches a handler as a name). A path it refuses is refused
// as no route or as a bad segment, never with a panic.
func FuzzParsePodPath(f *testing.F) {
	for _, seed := range []string{
		"default/web/app", "default/web/uid/app", "default/web", "default//app", "default/../app",
		"default/%2e%2e/app", "default/a%2Fb/app", "a%252F/b/c", "%/b/c", "ns/pod/uid/../c", "a/b/c/d/e", "",
	} {
		for shape := range 3 {
			f.Add(seed, shape)
		}
	}
	f.Fuzz(func(t *testing.T, path string, shape int) {
		p, err := parsePodPath(path, pathShape(((shape%3)+3)%3))
		if err != nil {
			var perr *pathError
			if !errors.Is(err, errNoRoute) && !errors.As(err, &perr) {
				t.Fatalf("parsePodPath(%q): an error of no kind: %v", path, err)
			}
			return
		}
		names := []string{p.namespace, p.pod}
		if p.container != "" || pathShape(((shape%3)+3)%3) != podShape {
			names = append(names, p.container)
		}
		if p.uid != "" {
			names = append(names, string(p.uid))
		}
		for _, name := range names {
			if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/%") {
				t.Fatalf("parsePodPath(%q) returned the name %q", path, name)
			}
			if msgs := content.IsPathSegmentName(name); len(msgs) > 0 {
				t.Fatalf("parsePodPath(%q) returned the name %q: %v", path, name, msgs)
			}
		}
	})
}
