package server

import (
	"encoding/json"
	"net/http"
)

// ConfigProvider gives the node's configuration for /configz. Package
// server does not import k8s.io/kubelet/config/v1beta1 (it pulls in
// k8s.io/component-base and its metrics library; only the module
// kubeletconfig, outside the core, imports it): the value is opaque here,
// and encoded with encoding/json as upstream's configz handler does.
type ConfigProvider interface {
	// KubeletConfig returns the configuration in effect, a value whose
	// JSON is a k8s.io/kubelet/config/v1beta1.KubeletConfiguration with
	// its kind and apiVersion set (or a json.Marshaler writing that). It
	// is called on every request, from the request's goroutine.
	KubeletConfig() (any, error)
}

// ConfigProviderFunc adapts a function to ConfigProvider.
type ConfigProviderFunc func() (any, error)

var _ ConfigProvider = ConfigProviderFunc(nil)

// KubeletConfig calls f.
func (f ConfigProviderFunc) KubeletConfig() (any, error) { return f() }

// configzBody is what upstream's /configz writes: every registered
// component configuration by name, and a kubelet registers one, its own,
// as "kubeletconfig".
type configzBody struct {
	KubeletConfig any `json:"kubeletconfig"`
}

// serveConfigz answers /configz as k8s.io/component-base/configz does: for
// any method, the configuration as compact JSON, or 500 with the error as
// http.Error writes it.
func (s *Server) serveConfigz(w http.ResponseWriter, _ *http.Request) {
	cfg, err := s.opts.Configz.KubeletConfig()
	if err != nil {
		s.log.Error("Failed to get the configuration for /configz", "err", err)
		http.Error(w, "error getting the configuration: "+err.Error(), http.StatusInternalServerError)
		return
	}
	b, err := json.Marshal(configzBody{KubeletConfig: cfg})
	if err != nil {
		s.log.Error("Failed to encode the configuration for /configz", "err", err)
		http.Error(w, "error marshaling json: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if _, err := w.Write(b); err != nil {
		s.log.Warn("Failed to write a response", "path", configzPath, "err", err)
	}
}
