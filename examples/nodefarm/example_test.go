package nodefarm_test

import (
	"fmt"
	"os"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeletkit/kubeletkit/examples/nodefarm"
)

// A farm of three nodes, one of which crashes one container in ten. Run
// would join them to the API server of the clientset.
func Example() {
	dir, err := os.MkdirTemp("", "nodefarm")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	f, err := nodefarm.New(fake.NewClientset(), nodefarm.Options{Nodes: 3, NamePrefix: "hollow-", RootDir: dir,
		Script: func(i int) nodefarm.Script {
			if i == 2 {
				return nodefarm.Script{CrashRatio: 0.1}
			}
			return nodefarm.Script{}
		}})
	if err != nil {
		panic(err)
	}
	for _, n := range f.Nodes() {
		fmt.Println(n.Name)
	}
	// Output:
	// hollow-0000
	// hollow-0001
	// hollow-0002
}
