// Module of hack/metrics-compare, the comparison of a kubelet's Prometheus
// expositions with upstream kubelet's. It is a module of its own (in
// go.work) because it parses and lints with the Prometheus libraries, which
// the core module never depends on.
module github.com/kubeletkit/kubeletkit/hack/metrics-compare

go 1.26.0

require (
	github.com/prometheus/client_golang v1.25.0
	github.com/prometheus/client_model v0.6.3
	github.com/prometheus/common v0.72.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
