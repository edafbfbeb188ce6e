package containerconfig

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

// ServiceLister lists the cluster's services, for the service environment
// variables of containers. It returns an error while it cannot yet (e.g.
// before its first list from the API server); a container of a pod that
// is not a static pod then waits in CreateContainerConfigError, as
// upstream's does.
type ServiceLister interface {
	ListServices() ([]*v1.Service, error)
}

// ServiceListerFunc adapts a function to ServiceLister.
type ServiceListerFunc func() ([]*v1.Service, error)

// ListServices calls f.
func (f ServiceListerFunc) ListServices() ([]*v1.Service, error) { return f() }

var _ ServiceLister = ServiceListerFunc(nil)

// ServiceEnv returns the service environment variables of a pod in
// namespace, as upstream kubelet sets them: for the kubernetes service of
// the default namespace always, and for the services of the pod's own
// namespace when enableServiceLinks (the default) is true; services without
// a cluster IP (headless) are left out. Each service gives
// <NAME>_SERVICE_HOST, <NAME>_SERVICE_PORT (its first port), one
// <NAME>_SERVICE_PORT_<PORTNAME> per named port, and the Docker-link
// variables <NAME>_PORT, <NAME>_PORT_<port>_<PROTO>[_PROTO|_PORT|_ADDR],
// where <NAME> is the service's name upper-cased with '-' as '_'.
func ServiceEnv(services []*v1.Service, namespace string, enableServiceLinks bool) map[string]string {
	chosen := map[string]*v1.Service{}
	for _, svc := range services {
		if !hasClusterIP(svc) {
			continue
		}
		switch {
		case svc.Namespace == "default" && svc.Name == "kubernetes":
			if _, ok := chosen[svc.Name]; !ok {
				chosen[svc.Name] = svc
			}
		case svc.Namespace == namespace && enableServiceLinks:
			chosen[svc.Name] = svc
		}
	}
	env := map[string]string{}
	// In name order, so that which of two services whose variables collide
	// wins does not depend on map order.
	for _, name := range slices.Sorted(maps.Keys(chosen)) {
		addServiceEnv(env, chosen[name])
	}
	return env
}

func hasClusterIP(svc *v1.Service) bool {
	return svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != v1.ClusterIPNone && len(svc.Spec.Ports) != 0
}

// envName is a service or port name as an environment variable's part.
func envName(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }

func addServiceEnv(env map[string]string, svc *v1.Service) {
	prefix := envName(svc.Name)
	ip := svc.Spec.ClusterIP
	env[prefix+"_SERVICE_HOST"] = ip
	env[prefix+"_SERVICE_PORT"] = strconv.Itoa(int(svc.Spec.Ports[0].Port))
	for i, p := range svc.Spec.Ports {
		port := strconv.Itoa(int(p.Port))
		if p.Name != "" {
			env[prefix+"_SERVICE_PORT_"+envName(p.Name)] = port
		}
		proto := v1.ProtocolTCP
		if p.Protocol != "" {
			proto = p.Protocol
		}
		url := fmt.Sprintf("%s://%s", strings.ToLower(string(proto)), net.JoinHostPort(ip, port))
		if i == 0 {
			env[prefix+"_PORT"] = url
		}
		link := fmt.Sprintf("%s_PORT_%s_%s", prefix, port, strings.ToUpper(string(proto)))
		env[link] = url
		env[link+"_PROTO"] = strings.ToLower(string(proto))
		env[link+"_PORT"] = port
		env[link+"_ADDR"] = ip
	}
}

// serviceEnv returns the pod's service variables from the Builder's
// lister (none without one).
func (b *Builder) serviceEnv(pod *v1.Pod) (map[string]string, error) {
	if b.opts.Services == nil {
		return nil, nil
	}
	services, err := b.opts.Services.ListServices()
	if err != nil {
		if podspec.IsStatic(pod) {
			// A static pod runs without the API server: it gets what
			// there is, as upstream's.
			return nil, nil
		}
		return nil, err
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	return ServiceEnv(services, pod.Namespace, links), nil
}
