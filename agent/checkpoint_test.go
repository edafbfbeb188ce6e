package agent_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/agent"
	"github.com/kubeletkit/kubeletkit/agent/agenttest"
	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/server"
)

// checkpointing is a full runtime that has the optional cri.Checkpointer
// capability too, recording what it is asked.
type checkpointing struct {
	agent.FullRuntime
	mu   sync.Mutex
	reqs []*runtimeapi.CheckpointContainerRequest
}

func (c *checkpointing) CheckpointContainer(_ context.Context, req *runtimeapi.CheckpointContainerRequest) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reqs = append(c.reqs, req)
	return nil
}

var _ cri.Checkpointer = (*checkpointing)(nil)

// The kubelet API's /checkpoint on a runtime that can checkpoint: the
// running container's ID, the timeout and upstream's archive path under
// RootDir/checkpoints go to the runtime, and the path comes back.
func TestCheckpointContainer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rt *checkpointing
		root := t.TempDir()
		opts := agenttest.Options{Runtime: func(f agent.FullRuntime) agent.Runtime { rt = &checkpointing{FullRuntime: f}; return rt }}
		opts.Agent.RootDir = root
		n := agenttest.NewNode(t, opts)
		n.AddPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox:1.36"}}}})
		require.True(t, n.StepUntil(time.Minute, func() bool {
			p := n.Pod("default", "web")
			return p != nil && p.Status.Phase == v1.PodRunning
		}))
		a := n.Agent()
		h := server.New(server.Options{PodGetter: a.API(), Checkpoints: a.API(),
			Auth: &server.Auth{Authenticator: tokens, Authorizer: onlyAdmin, NodeName: "node1"}}).Handler()
		req := httptest.NewRequest(http.MethodPost, "/checkpoint/default/web/app?timeout=30", nil)
		req.Header.Set("Authorization", "Bearer admin-token")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		require.Equal(t, http.StatusOK, w.Code, w.Body.String())
		want := root + "/checkpoints/checkpoint-web_default-app-" + n.Now().Format(time.RFC3339) + ".tar"
		assert.JSONEq(t, `{"items":["`+want+`"]}`, w.Body.String())
		require.Len(t, rt.reqs, 1)
		assert.Equal(t, want, rt.reqs[0].GetLocation())
		assert.Equal(t, int64(30), rt.reqs[0].GetTimeout())
		assert.True(t, strings.HasSuffix(n.Pod("default", "web").Status.ContainerStatuses[0].ContainerID, "://"+rt.reqs[0].GetContainerId()),
			"the running container's ID")
		assert.DirExists(t, root+"/checkpoints")
	})
}
