package podresources

import "strings"

// Metrics counts the calls the Server answers on its socket, as upstream's
// kubelet_pod_resources_endpoint_requests_* and _errors_* series count
// them: a call the rate limit rejected is not counted (it never reached
// the method). Calls of the in-process Service are not counted.
type Metrics interface {
	// Request counts one call of method (MethodList, MethodGet,
	// MethodGetAllocatableResources) of API version (VersionV1,
	// VersionV1alpha1) that was answered; failed tells whether the answer
	// was an error. It is called from the server's goroutines and must not
	// block.
	Request(version, method string, failed bool)
}

// The API versions and methods Metrics.Request is told of: upstream's
// server_api_version label values and the gRPC methods.
const (
	VersionV1       = "v1"
	VersionV1alpha1 = "v1alpha1"

	MethodList                    = "List"
	MethodGet                     = "Get"
	MethodGetAllocatableResources = "GetAllocatableResources"
)

// callOf is the API version and method of a gRPC full method name
// ("/v1.PodResourcesLister/List"); ok is false for a name of another
// shape.
func callOf(fullMethod string) (version, method string, ok bool) {
	service, method, ok := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	if !ok {
		return "", "", false
	}
	version, _, ok = strings.Cut(service, ".")
	return version, method, ok && version != "" && method != ""
}
