package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Example compares a kubelet's /metrics with upstream's: a required family
// it lacks fails the comparison, unless it is on the known list.
func Example() {
	up, ours := must(os.MkdirTemp("", "up")), must(os.MkdirTemp("", "ours"))
	defer os.RemoveAll(up)
	defer os.RemoveAll(ours)
	expo := "# HELP kubelet_node_name [ALPHA] The node's name. The count is always 1.\n" +
		"# TYPE kubelet_node_name gauge\nkubelet_node_name{node=\"n\"} 1\n"
	_ = os.WriteFile(filepath.Join(up, "metrics.txt"), []byte(expo), 0o644)
	_ = os.WriteFile(filepath.Join(ours, "metrics.txt"), nil, 0o644)

	res := must(compareDirs(up, ours, map[string]bool{"kubelet_node_name": true}))
	fmt.Println("failed:", res.failed())
	res.markKnown(map[string]bool{"kubelet_node_name": true})
	var b strings.Builder
	res.write(&b)
	fmt.Println(strings.SplitN(b.String(), "\n", 2)[0])
	// Output:
	// failed: true
	// metrics-compare: ok: upstream serves 1 families: 0 the same, 0 with another help text, 0 differ, 1 missing (1 required); 0 ours only; 0 lint problems of ours; 1 differences known
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
