package kubeletconfig_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kubeletkit/kubeletkit/kubeletconfig"
)

// FuzzLoad feeds arbitrary bytes to the loader as a configuration file and
// as a drop-in: it must return an error or a configuration that defaults,
// validates and converts without panicking.
func FuzzLoad(f *testing.F) {
	// Small seeds: the golden files (TestGoldenFiles) are large enough
	// for the YAML parser to spend the run on a few of their mutations.
	f.Add([]byte(head + "staticPodPath: manifests\nauthentication:\n  x509:\n    clientCAFile: ca.crt\n"))
	f.Add([]byte(head + "evictionHard:\n  memory.available: 1Gi\nfeatureGates: {EventedPLEG: true}\n"))
	f.Add([]byte(`{"apiVersion":"kubelet.config.k8s.io/v1beta1","kind":"KubeletConfiguration","maxPods":null}`))
	// One directory for every input of this process: a temporary
	// directory per input would cost more than the loading.
	dir := f.TempDir()
	file := filepath.Join(dir, "config.yaml")
	dropIns := filepath.Join(dir, "conf.d")
	if err := os.Mkdir(dropIns, 0o700); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dropIns, "10.conf"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, files := range []kubeletconfig.Files{{Config: file}, {DropInDir: dropIns}} {
			kc, err := kubeletconfig.Load(files)
			if err != nil {
				continue
			}
			if kc.APIVersion != kubeletconfig.APIVersion || kc.Kind != kubeletconfig.Kind {
				t.Fatalf("loaded %s %s", kc.APIVersion, kc.Kind)
			}
			if kubeletconfig.Validate(kc) == nil {
				_, _ = kubeletconfig.Convert(kc)
			}
		}
	})
}
