package localstate_test

import (
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/localstate"
)

// A node keeps the pods the API server sent it, and reads them back after
// a restart while the API server does not answer.
func Example() {
	dir, _ := os.MkdirTemp("", "localstate-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "localstate.db")

	store, err := localstate.OpenBolt(path, localstate.BoltOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	st, _ := localstate.New(store)
	web := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-web", ResourceVersion: "7"}}
	wrote, _ := st.SetPods([]*v1.Pod{web})
	again, _ := st.SetPods([]*v1.Pod{web}) // same resourceVersion: no write
	fmt.Println("wrote:", wrote, "again:", again)
	_ = store.Close()

	// The agent restarts; the API server is still away.
	store, _ = localstate.OpenBolt(path, localstate.BoltOptions{})
	defer store.Close()
	st, _ = localstate.New(store)
	pods, _ := st.Pods()
	for _, p := range pods {
		fmt.Println(p.Namespace+"/"+p.Name, p.UID)
	}
	info, _ := os.Stat(path)
	fmt.Println(info.Mode().Perm())
	// Output:
	// wrote: true again: false
	// default/web uid-web
	// -rw-------
}
