package server_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/kubeletkit/kubeletkit/server"
)

// /checkpoint answers as upstream's kubelet: the pod and the container of
// its spec found first, the last timeout parameter passed on, the
// runtime's failure 500 with its error, the archive's path as JSON.
func TestCheckpoint(t *testing.T) {
	with := func(o *server.Options) { o.Checkpoints = o.Runner.(server.Checkpointer) }
	ckpt := func(container string, timeout int64) []call {
		return []call{{Method: "CheckpointContainer", Pod: "default/web", Container: container, Timeout: timeout}}
	}
	runRoutes(t, []routeCase{
		{name: "a container", opts: with, method: http.MethodPost, path: "/checkpoint/default/web/app", code: http.StatusOK,
			want:  `{"items":["/var/lib/kubelet/checkpoints/checkpoint-web_default-app-2026-12-02T18:00:00Z.tar"]}`,
			calls: ckpt("app", 0)},
		{name: "an init container, the last timeout", opts: with, method: http.MethodPost, path: "/checkpoint/default/web/init?timeout=3&timeout=20",
			code: http.StatusOK, calls: ckpt("init", 20)},
		{name: "no such pod", opts: with, method: http.MethodPost, path: "/checkpoint/default/nope/app", code: http.StatusNotFound,
			want: "pod does not exist", calls: []call{}},
		{name: "no such container", opts: with, method: http.MethodPost, path: "/checkpoint/default/web/db", code: http.StatusNotFound,
			want: "container db does not exist", calls: []call{}},
		{name: "a timeout that is no number", opts: with, method: http.MethodPost, path: "/checkpoint/default/web/app?timeout=soon",
			code: http.StatusNotFound, want: "cannot parse value of timeout parameter", calls: []call{}},
		{name: "the runtime lacks it", opts: with, method: http.MethodPost, path: "/checkpoint/default/web/app",
			node: func(n *fakeNode) {
				n.checkpoint = func(int64) (string, error) {
					return "", errors.New("rpc error: code = Unimplemented desc = method CheckpointContainer not implemented")
				}
			},
			code:  http.StatusInternalServerError,
			want:  "checkpointing of default/web/app failed (rpc error: code = Unimplemented desc = method CheckpointContainer not implemented)",
			calls: ckpt("app", 0)},
		{name: "GET is not allowed", opts: with, path: "/checkpoint/default/web/app", code: http.StatusMethodNotAllowed, calls: []call{}},
		{name: "a UID segment is no route", opts: with, method: http.MethodPost, path: "/checkpoint/default/web/uid-web/app",
			code: http.StatusNotFound, calls: []call{}},
		{name: "no Checkpointer: no route", method: http.MethodPost, path: "/checkpoint/default/web/app", code: http.StatusNotFound, calls: []call{}},
	})
}
