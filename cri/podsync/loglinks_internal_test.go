package podsync

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLogLinkName(t *testing.T) {
	id := strings.Repeat("c", 64)
	for _, tc := range []struct {
		name, pod, namespace, container, want string
	}{
		{"upstream's layout", "web", "default", "nginx", "web_default_nginx-" + id + ".log"},
		{"cut to 255 bytes, suffix kept", strings.Repeat("p", 200), "ns", "app",
			(strings.Repeat("p", 200) + "_ns_app-" + id)[:251] + ".log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := logLinkName(tc.pod, tc.namespace, tc.container, id)
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, len(got), 255)
		})
	}
}
