package prober_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeletkit/kubeletkit/prober"
)

func TestHTTPSProbeAndHostHeader(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "app.example" {
			w.WriteHeader(421)
		}
	}))
	defer srv.Close()
	host, port := hostPort(t, srv.Listener.Addr().String())
	r := prober.NewRunner(prober.RunnerOptions{})
	defer r.Close()
	for _, tc := range []struct {
		name    string
		headers []v1.HTTPHeader
		want    prober.Result
	}{
		{"host header", []v1.HTTPHeader{{Name: "Host", Value: "app.example"}}, prober.Success},
		{"no host header", nil, prober.Failure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := r.Probe(t.Context(), prober.Target{Probe: &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{
				Scheme: v1.URISchemeHTTPS, Host: host, Port: intstr.FromInt32(int32(port)), HTTPHeaders: tc.headers}}}})
			require.NoError(t, err)
			assert.Equal(t, tc.want, out.Result, out.Output)
		})
	}
}

// A gRPC target that accepts the connection and never answers is cut off at
// the probe's timeout.
func TestGRPCProbeSilentTarget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	host, port := hostPort(t, ln.Addr().String())
	conns := make(chan net.Conn, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	defer func() {
		_ = ln.Close()
		<-done
		close(conns)
		for c := range conns {
			_ = c.Close()
		}
	}()
	out, err := prober.NewRunner(prober.RunnerOptions{}).Probe(t.Context(), prober.Target{PodIP: host, Probe: &v1.Probe{
		TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: int32(port)}}}})
	require.NoError(t, err)
	assert.Equal(t, prober.Failure, out.Result)
	assert.Contains(t, out.Output, "timeout")
}
