package containerconfig_test

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
	"github.com/kubeletkit/kubeletkit/volume"
)

// The CRI configs of a pod's sandbox and of its container, without a
// runtime: the environment from a configMap and the downward API, $(VAR)
// expansion, cluster DNS and the log path.
func Example() {
	sources := &volume.StaticSources{}
	sources.SetConfigMap(&v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"},
		Data:       map[string]string{"MODE": "fast"},
	})
	b, err := containerconfig.New(containerconfig.Options{
		ConfigMaps: sources, NodeName: "node-1", HostIPs: []string{"192.0.2.10"},
		ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-0", Namespace: "shop", UID: "uid-1"},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "app", Image: "nginx:1.27", Command: []string{"run", "--mode=$(MODE)", "--node=$(NODE)"},
			EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "web"}}}},
			Env:     []v1.EnvVar{{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
		}}},
	}

	sb, err := b.SandboxConfig(pod, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("hostname:", sb.GetHostname())
	fmt.Println("logs:", sb.GetLogDirectory())
	fmt.Println("dns:", sb.GetDnsConfig().GetServers(), sb.GetDnsConfig().GetSearches())

	cfg, err := b.ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], cri.ContainerTypeRegular, 0, []string{"10.88.0.5"}, "", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, kv := range cfg.GetEnvs() {
		fmt.Printf("env: %s=%s\n", kv.GetKey(), kv.GetValue())
	}
	fmt.Println("command:", cfg.GetCommand())
	fmt.Println("log:", cfg.GetLogPath())
	fmt.Println("seccomp:", cfg.GetLinux().GetSecurityContext().GetSeccomp().GetProfileType())
	// Output:
	// hostname: web-0
	// logs: /var/log/pods/shop_web-0_uid-1
	// dns: [10.96.0.10] [shop.svc.cluster.local svc.cluster.local cluster.local]
	// env: MODE=fast
	// env: NODE=node-1
	// command: [run --mode=fast --node=node-1]
	// log: app/0.log
	// seccomp: Unconfined
}
