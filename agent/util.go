package agent

import (
	cryptorand "crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// lowerDNS lower-cases a host name, as upstream does for the node name.
func lowerDNS(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// hostIP returns the machine's first global unicast address, or 127.0.0.1.
func hostIP() string {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.IsGlobalUnicast() && ipn.IP.To4() != nil {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

func sortPods(pods []v1.Pod) {
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
}

// sortByCreation orders new pods as upstream admits them: oldest first.
func sortByCreation(pods []*v1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
	})
}

// freshRootDir names a root directory of the agent's own under the
// temporary directory, for a node on the embedded fake runtime without
// Options.RootDir: that runtime's containers live and die with the
// process, and a root shared with other agents or kept from an earlier run
// would hold their logs (counted as restarts, as upstream counts them) and
// the checkpoints of pods the runtime no longer has. Run creates it as it
// creates any root directory, and removes it when it returns.
func freshRootDir(node string) (string, error) {
	var b [6]byte
	if _, err := cryptorand.Read(b[:]); err != nil {
		return "", err
	}
	return filepath.Join(os.TempDir(), "kubeletkit-"+node+"-"+hex.EncodeToString(b[:])), nil
}
