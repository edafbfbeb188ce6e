package containerconfig

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// etcHosts is where a container finds its hosts file.
const etcHosts = "/etc/hosts"

// hostnameMax is the longest hostname a pod gets: the kernel's nodename
// holds 64 bytes with its terminating NUL.
const hostnameMax = 63

// podHostnameAndDomain returns the pod's hostname and domain as upstream's
// kubelet computes them. spec.hostnameOverride (HostnameOverride, on by
// default) is the hostname when set, with no domain: spec.hostname and
// spec.subdomain are then ignored. Otherwise the hostname is spec.hostname,
// else the pod's name, and a pod that names a subdomain has the domain
// <subdomain>.<namespace>.svc.<clusterDomain>. The hostname is cut to 63
// characters without a trailing '-' or '.'. The API server has validated
// the fields, and so has podspec/validation a static pod's; the checks here
// are upstream's kubelet's own, with its messages.
func podHostnameAndDomain(pod *v1.Pod, clusterDomain string) (hostname, domain string, err error) {
	if o := pod.Spec.HostnameOverride; o != nil {
		if msgs := validation.IsDNS1123Subdomain(*o); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod HostnameOverride %q is not a valid DNS subdomain: %s", *o, strings.Join(msgs, ";"))
		}
		hostname, err = truncateHostname(pod.Name, *o)
		return hostname, "", err
	}
	hostname = pod.Name
	if h := pod.Spec.Hostname; h != "" {
		if msgs := validation.IsDNS1123Label(h); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Hostname %q is not a valid DNS label: %s", h, strings.Join(msgs, ";"))
		}
		hostname = h
	}
	if hostname, err = truncateHostname(pod.Name, hostname); err != nil {
		return "", "", err
	}
	if sub := pod.Spec.Subdomain; sub != "" {
		if msgs := validation.IsDNS1123Label(sub); len(msgs) != 0 {
			return "", "", fmt.Errorf("pod Subdomain %q is not a valid DNS label: %s", sub, strings.Join(msgs, ";"))
		}
		domain = sub + "." + pod.Namespace + ".svc." + clusterDomain
	}
	return hostname, domain, nil
}

// truncateHostname cuts a hostname longer than hostnameMax and then drops
// the '-' and '.' it would end with; nothing left is an error.
func truncateHostname(podName, hostname string) (string, error) {
	if len(hostname) <= hostnameMax {
		return hostname, nil
	}
	cut := strings.TrimRight(hostname[:hostnameMax], "-.")
	if cut == "" {
		return "", fmt.Errorf("hostname for pod %q was invalid: %q", podName, hostname)
	}
	return cut, nil
}

// hostsMount writes the pod's hosts file, PodsDir/<uid>/etc-hosts, and
// returns its mount at /etc/hosts, as upstream kubelet manages it: for a
// pod on its own network once it has IPs, the localhost lines, each pod IP
// with the pod's hostname (its FQDN first when it has a subdomain), then
// spec.hostAliases; for a host-network pod, the node's hosts file followed
// by the aliases. Nothing without PodsDir, for a pod without IPs on its own
// network, or for a container that mounts a volume at /etc/hosts itself.
// The file is written anew for each container the pod starts.
func (b *Builder) hostsMount(pod *v1.Pod, c *v1.Container, podIPs []string) (*runtimeapi.Mount, error) {
	if b.opts.PodsDir == "" || (len(podIPs) == 0 && !pod.Spec.HostNetwork) {
		return nil, nil
	}
	for _, m := range c.VolumeMounts {
		if m.MountPath == etcHosts {
			return nil, nil
		}
	}
	if !filepath.IsLocal(string(pod.UID)) || strings.ContainsRune(string(pod.UID), '/') {
		return nil, fmt.Errorf("container %s: pod UID %q is not a plain path element", c.Name, pod.UID)
	}
	var content []byte
	if pod.Spec.HostNetwork {
		node := b.opts.NodeHostsFile
		if node == "" {
			node = etcHosts
		}
		b, err := os.ReadFile(node)
		if err != nil {
			return nil, fmt.Errorf("container %s: hosts file: %w", c.Name, err)
		}
		content = hostNetworkHosts(b, pod.Spec.HostAliases)
	} else {
		hostname, domain, err := podHostnameAndDomain(pod, b.opts.ClusterDomain)
		if err != nil {
			return nil, fmt.Errorf("container %s: hosts file: %w", c.Name, err)
		}
		content = managedHosts(podIPs, hostname, domain, pod.Spec.HostAliases)
	}
	dir := filepath.Join(b.opts.PodsDir, string(pod.UID))
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("container %s: hosts file: %w", c.Name, err)
	}
	file := filepath.Join(dir, "etc-hosts")
	if err := os.WriteFile(file, content, 0o644); err != nil {
		return nil, fmt.Errorf("container %s: hosts file: %w", c.Name, err)
	}
	// The mode must not depend on the kubelet's umask.
	if err := os.Chmod(file, 0o644); err != nil {
		return nil, fmt.Errorf("container %s: hosts file: %w", c.Name, err)
	}
	return &runtimeapi.Mount{ContainerPath: etcHosts, HostPath: file, SelinuxRelabel: true}, nil
}

// managedHosts is the hosts file of a pod on its own network.
func managedHosts(podIPs []string, hostname, domain string, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString("# Kubernetes-managed hosts file.\n" +
		"127.0.0.1\tlocalhost\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\n" +
		"fe00::0\tip6-mcastprefix\n" +
		"fe00::1\tip6-allnodes\n" +
		"fe00::2\tip6-allrouters\n")
	for _, ip := range podIPs {
		if domain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	writeHostAliases(&b, aliases)
	return b.Bytes()
}

// hostNetworkHosts is the hosts file of a host-network pod: the node's.
func hostNetworkHosts(node []byte, aliases []v1.HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString("# Kubernetes-managed hosts file (host network).\n")
	b.Write(node)
	writeHostAliases(&b, aliases)
	return b.Bytes()
}

func writeHostAliases(b *bytes.Buffer, aliases []v1.HostAlias) {
	if len(aliases) == 0 {
		return
	}
	b.WriteString("\n# Entries added by HostAliases.\n")
	for _, a := range aliases {
		fmt.Fprintf(b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
}
