package localstate_test

import (
	"fmt"
	"path/filepath"
	"strconv"
	"testing"

	bolt "go.etcd.io/bbolt"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeletkit/kubeletkit/localstate"
)

// benchPods are n pods of a realistic size: two containers with resources,
// env, a probe, a configMap volume.
func benchPods(n int) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	for i := range pods {
		p := testPod(fmt.Sprintf("pod-%03d", i), "1")
		c := v1.Container{Name: "app", Image: "registry.example/app:1.2.3",
			Env:           []v1.EnvVar{{Name: "MODE", Value: "edge"}, {Name: "LEVEL", Value: "info"}},
			Resources:     v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m"), v1.ResourceMemory: resource.MustParse("64Mi")}},
			LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz"}}, PeriodSeconds: 10},
			VolumeMounts:  []v1.VolumeMount{{Name: "cfg", MountPath: "/etc/app"}}}
		p.Spec.Containers = []v1.Container{c, {Name: "sidecar", Image: "registry.example/sidecar:4"}}
		p.Spec.Volumes = []v1.Volume{{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "app"}}}}}
		p.Labels = map[string]string{"app": "edge", "tier": "backend"}
		pods[i] = p
	}
	return pods
}

// BenchmarkPodUpdate is the write-through cost of one pod update (a watch
// event changing one pod's resourceVersion) with 110 pods kept: SetPods
// finds the one changed pod and writes it in one fsynced transaction.
func BenchmarkPodUpdate(b *testing.B) {
	for _, store := range []string{"bolt", "memory"} {
		b.Run("store="+store+"/pods=110", func(b *testing.B) {
			var s localstate.Store = localstate.NewMemory(0)
			if store == "bolt" {
				bs, err := localstate.OpenBolt(filepath.Join(b.TempDir(), "s.db"), localstate.BoltOptions{})
				if err != nil {
					b.Fatal(err)
				}
				defer bs.Close()
				s = bs
			}
			st, _ := localstate.New(s)
			pods := benchPods(110)
			if _, err := st.SetPods(pods); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			rv := 1
			for b.Loop() {
				rv++
				p := *pods[rv%len(pods)]
				p.ResourceVersion = strconv.Itoa(rv)
				pods[rv%len(pods)] = &p
				if wrote, err := st.SetPods(pods); err != nil || !wrote {
					b.Fatal(wrote, err)
				}
			}
		})
	}
}

// BenchmarkStartFromCheckpoint is what an agent restarted while its API
// server is away pays before it can serve its pods: open the file, learn
// what it holds, decode every pod.
func BenchmarkStartFromCheckpoint(b *testing.B) {
	for _, n := range []int{10, 110} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "s.db")
			s, err := localstate.OpenBolt(path, localstate.BoltOptions{})
			if err != nil {
				b.Fatal(err)
			}
			st, _ := localstate.New(s)
			if _, err := st.SetPods(benchPods(n)); err != nil {
				b.Fatal(err)
			}
			_ = s.Close()
			b.ReportAllocs()
			for b.Loop() {
				s, err := localstate.OpenBolt(path, localstate.BoltOptions{})
				if err != nil {
					b.Fatal(err)
				}
				st, err := localstate.New(s)
				if err != nil {
					b.Fatal(err)
				}
				pods, err := st.Pods()
				if err != nil || len(pods) != n {
					b.Fatal(len(pods), err)
				}
				_ = s.Close()
			}
		})
	}
}

// BenchmarkOpenBolt is what OpenBolt's checks cost on a store filled to
// DefaultMaxBytes (a third each of pods, configMaps and sealed secrets),
// against bbolt's open alone: the layout walk, the read of every value,
// bbolt's consistency check, opening every sealed secret.
func BenchmarkOpenBolt(b *testing.B) {
	for _, size := range []int{1 << 10, 1 << 20} {
		path := filepath.Join(b.TempDir(), "s.db")
		s, err := localstate.OpenBolt(path, localstate.BoltOptions{SecretKey: testKey})
		if err != nil {
			b.Fatal(err)
		}
		value := make([]byte, size-16)
		n := int(localstate.DefaultMaxBytes*99/100) / size
		for i := 0; i < n; {
			var batch localstate.Batch
			for ; i < n && len(batch.Puts) < 1000; i++ {
				kind := []localstate.Kind{localstate.Pods, localstate.ConfigMaps, localstate.Secrets}[i%3]
				batch.Puts = append(batch.Puts, localstate.Entry{Key: localstate.Key{Kind: kind, Key: fmt.Sprintf("ns/%010d", i)}, Value: value})
			}
			if err := s.Write(batch); err != nil {
				b.Fatal(err)
			}
		}
		_ = s.Close()
		b.Run(fmt.Sprintf("values=%d/OpenBolt", size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s, err := localstate.OpenBolt(path, localstate.BoltOptions{SecretKey: testKey})
				if err != nil {
					b.Fatal(err)
				}
				if rec, ok := s.Recovered(); ok {
					b.Fatal(rec)
				}
				_ = s.Close()
			}
		})
		b.Run(fmt.Sprintf("values=%d/bbolt.Open", size), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				db, err := bolt.Open(path, 0o600, nil)
				if err != nil {
					b.Fatal(err)
				}
				_ = db.Close()
			}
		})
	}
}
