package kubeletconfig_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubeletkit/kubeletkit/kubeletconfig"
)

// A kubeadm-style file with a drop-in: loaded, validated and converted;
// a field the node lacks is refused by name.
func Example() {
	dir, err := os.MkdirTemp("", "kubeletconfig")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "config.yaml")
	_ = os.WriteFile(file, []byte(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: /etc/kubernetes/manifests
cgroupDriver: systemd
authentication:
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
`), 0o600)
	dropIns := filepath.Join(dir, "conf.d")
	_ = os.Mkdir(dropIns, 0o750)
	_ = os.WriteFile(filepath.Join(dropIns, "10-edge.conf"), []byte(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
readOnlyPort: 10255
cpuManagerPolicy: static
podsPerCore: 10
`), 0o600)

	kc, err := kubeletconfig.Load(kubeletconfig.Files{Config: file, DropInDir: dropIns})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := kubeletconfig.Validate(kc); err != nil {
		fmt.Println(err)
		return
	}
	_, err = kubeletconfig.Convert(kc)
	fmt.Println(errors.Is(err, kubeletconfig.ErrUnsupported), err)

	kc.PodsPerCore = 0
	cfg, err := kubeletconfig.Convert(kc)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cfg.Agent.Sources.ManifestPath, cfg.Agent.Cgroups.Driver, cfg.Agent.HTTP.Listen, cfg.RuntimeEndpoint, cfg.Agent.Resources.CPUManagerPolicy)
	// Output:
	// true kubelet config: podsPerCore 10: not supported by this node
	// /etc/kubernetes/manifests systemd 0.0.0.0:10255 unix:///run/containerd/containerd.sock static
}
