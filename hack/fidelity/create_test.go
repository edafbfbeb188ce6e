package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
)

// create makes the pods that wait (create-after) after the others, in the
// order of their waits, and no sooner than asked.
func TestCreateAfter(t *testing.T) {
	var mu sync.Mutex
	var names []string
	var times []time.Time
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/api/v1/nodes/n1":
			_ = json.NewEncoder(w).Encode(v1.Node{Status: v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}})
		case r.Method == http.MethodPost && r.URL.Path == "/api/v1/namespaces/default/pods":
			var p v1.Pod
			if err := json.NewDecoder(r.Body).Decode(&p); err != nil || p.Spec.NodeName != "n1" {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			mu.Lock()
			names, times = append(names, p.Name), append(times, time.Now())
			mu.Unlock()
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte("{}"))
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	for name, meta := range map[string]string{
		"a": `{name: a, annotations: {fidelity.kubeletkit.io/create-after: 300ms}}`,
		"b": `{name: b, annotations: {fidelity.kubeletkit.io/create-after: 100ms}}`,
		"c": `{name: c}`,
		"d": `{name: d}`,
	} {
		manifest := "apiVersion: v1\nkind: Pod\nmetadata: " + meta + "\nspec: {containers: [{name: app, image: busybox}]}\n"
		require.NoError(t, os.WriteFile(filepath.Join(dir, name+".yaml"), []byte(manifest), 0o600))
	}
	start := time.Now()
	require.NoError(t, create([]string{"--server", srv.URL, "--node", "n1", dir}))
	assert.Equal(t, []string{"c", "d", "b", "a"}, names)
	assert.GreaterOrEqual(t, times[2].Sub(start), 100*time.Millisecond)
	assert.GreaterOrEqual(t, times[3].Sub(start), 300*time.Millisecond)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "e.yaml"), []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: e, annotations: {fidelity.kubeletkit.io/create-after: soon}}\nspec: {containers: [{name: app, image: busybox}]}\n"), 0o600))
	assert.ErrorContains(t, create([]string{"--server", srv.URL, "--node", "n1", dir}), `annotation fidelity.kubeletkit.io/create-after: "soon" is not a duration`)
}
