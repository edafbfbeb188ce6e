package source_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

// benchManifest is a realistic static pod: labels, annotations, two
// containers with ports, env, resources and probes, and a volume.
func benchManifest(i int, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: pod-%d
  namespace: kube-system
  labels: {app: pod-%d, tier: edge}
  annotations: {team: platform}
spec:
  priorityClassName: system-node-critical
  volumes:
  - name: data
    hostPath: {path: /var/lib/pod-%d}
  containers:
  - name: app
    image: %s
    command: ["sh", "-c", "exec sleep 3600"]
    env: [{name: MODE, value: edge}, {name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
    ports: [{containerPort: 8080, name: http}]
    resources:
      requests: {cpu: 100m, memory: 64Mi}
      limits: {cpu: 500m, memory: 128Mi}
    volumeMounts: [{name: data, mountPath: /data}]
    readinessProbe:
      httpGet: {path: /ready, port: 8080}
      periodSeconds: 2
    livenessProbe:
      exec: {command: ["true"]}
  - name: sidecar
    image: busybox:1.36
    command: ["sh", "-c", "exec sleep 3600"]
`, i, i, i, image)
}

func benchPods(b *testing.B, n int, image func(i int) string) []*v1.Pod {
	b.Helper()
	out := make([]*v1.Pod, n)
	for i := range n {
		ps, err := source.ReadManifest([]byte(benchManifest(i, image(i))), syncloop.SourceFile, fmt.Sprintf("/m/pod-%d.yaml", i), "node-1")
		if err != nil {
			b.Fatal(err)
		}
		out[i] = ps[0]
	}
	return out
}

// BenchmarkMergeSet merges a file source's SET into a Merger that holds its
// pods already, as after every periodic read:
//
//   - all-new: the first SET into an empty merger: every pod an ADD (a deep
//     copy, the annotations, the name index).
//   - unchanged: equal pods in new objects (what a re-read makes). Two such
//     lists alternate, so every pod is compared every time.
//   - changed=1: the same, with one pod's spec changed every time (an
//     UPDATE; the pod keeps its UID, as an API pod would).
//   - same-pointers: the very objects of the last SET again (a re-sent URL
//     body, files a poll did not read again, an informer's list): the
//     merger skips the comparison.
func BenchmarkMergeSet(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		same := func(int) string { return "registry.local/app:v1" }
		base := benchPods(b, n, same)
		b.Run(fmt.Sprintf("pods=%d/all-new", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				m := source.NewMerger(source.MergerOptions{})
				if out := m.Merge(syncloop.SourceFile, syncloop.PodUpdate{Op: syncloop.OpSet, Pods: base}); len(out) != 1 || len(out[0].Pods) != n {
					b.Fatalf("unexpected updates %v", describe(out))
				}
			}
		})
		b.Run(fmt.Sprintf("pods=%d/unchanged", n), func(b *testing.B) {
			lists := [2][]*v1.Pod{base, benchPods(b, n, same)}
			m := source.NewMerger(source.MergerOptions{})
			m.Merge(syncloop.SourceFile, syncloop.PodUpdate{Op: syncloop.OpSet, Pods: base})
			b.ReportAllocs()
			i := 1
			for b.Loop() {
				if out := m.Merge(syncloop.SourceFile, syncloop.PodUpdate{Op: syncloop.OpSet, Pods: lists[i%2]}); len(out) != 0 {
					b.Fatalf("unexpected updates %v", describe(out))
				}
				i++
			}
		})
		b.Run(fmt.Sprintf("pods=%d/changed=1", n), func(b *testing.B) {
			other := benchPods(b, n, same)
			other[0].Spec.Containers[0].Image = "registry.local/app:v2"
			lists := [2][]*v1.Pod{base, other}
			m := source.NewMerger(source.MergerOptions{})
			m.Merge(syncloop.SourceFile, syncloop.PodUpdate{Op: syncloop.OpSet, Pods: base})
			b.ReportAllocs()
			i := 1
			for b.Loop() {
				out := m.Merge(syncloop.SourceFile, syncloop.PodUpdate{Op: syncloop.OpSet, Pods: lists[i%2]})
				if len(out) != 1 || out[0].Op != syncloop.OpUpdate || len(out[0].Pods) != 1 {
					b.Fatalf("unexpected updates %v", describe(out))
				}
				i++
			}
		})
		b.Run(fmt.Sprintf("pods=%d/same-pointers", n), func(b *testing.B) {
			m := source.NewMerger(source.MergerOptions{})
			m.Merge(syncloop.SourceFile, syncloop.PodUpdate{Op: syncloop.OpSet, Pods: base})
			b.ReportAllocs()
			for b.Loop() {
				if out := m.Merge(syncloop.SourceFile, syncloop.PodUpdate{Op: syncloop.OpSet, Pods: base}); len(out) != 0 {
					b.Fatalf("unexpected updates %v", describe(out))
				}
			}
		})
	}
}

// BenchmarkFileRead reads, decodes, defaults and validates a manifest
// directory, as the file source does every period and on every change.
func BenchmarkFileRead(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("files=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			for i := range n {
				if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("pod-%d.yaml", i)), []byte(benchManifest(i, "app:v1")), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			f, err := source.NewFile(source.FileOptions{Path: dir, NodeName: "node-1", Out: make(chan syncloop.PodUpdate)})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				ps, err := f.Read()
				if err != nil || len(ps) != n {
					b.Fatalf("read %d pods, %v", len(ps), err)
				}
			}
		})
	}
}

// BenchmarkReadManifest is one manifest's share of BenchmarkFileRead, without
// the file system.
func BenchmarkReadManifest(b *testing.B) {
	data := []byte(benchManifest(1, "app:v1"))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := source.ReadManifest(data, syncloop.SourceFile, "/m/pod-1.yaml", "node-1"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadManifestJSON is BenchmarkReadManifest with the manifest in
// JSON, which skips the YAML conversion.
func BenchmarkReadManifestJSON(b *testing.B) {
	ps, err := source.DecodeManifest([]byte(benchManifest(1, "app:v1")))
	if err != nil {
		b.Fatal(err)
	}
	ps[0].APIVersion, ps[0].Kind = "v1", "Pod"
	data, err := json.Marshal(ps[0])
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := source.ReadManifest(data, syncloop.SourceFile, "/m/pod-1.json", "node-1"); err != nil {
			b.Fatal(err)
		}
	}
}
