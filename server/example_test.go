package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/kubeletkit/kubeletkit/server"
)

// node is what a node agent gives the server: its pods, its status and its
// health. Package agent's Agent implements all three.
type node struct{ unhealthy error }

func (node) PodStatuses() []v1.Pod {
	return []v1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-node1"}, Status: v1.PodStatus{Phase: v1.PodRunning}}}
}

func (node) NodeName() string { return "node1" }

func (node) NodeStatus() (v1.NodeStatus, bool) {
	return v1.NodeStatus{Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}}, true
}

func (n node) Healthy() error { return n.unhealthy }

// Without Auth the server is the read-only one (upstream's port 10255):
// its handler, mounted in an httptest server, answers the read-only
// endpoints and refuses the others.
func Example() {
	n := node{}
	srv := server.New(server.Options{Pods: n, Node: n, Health: n})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()

	get := func(path string) []byte {
		resp, err := ts.Client().Get(ts.URL + path)
		if err != nil {
			fmt.Println(err)
			return nil
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		fmt.Printf("%s: %d\n", path, resp.StatusCode)
		return body
	}
	fmt.Printf("%s\n", get("/healthz"))
	fmt.Printf("%s", get("/healthz?verbose"))
	var pods v1.PodList
	_ = json.Unmarshal(get("/pods"), &pods)
	for _, p := range pods.Items {
		fmt.Println(pods.Kind, p.Namespace, p.Name, p.Status.Phase)
	}
	var nd v1.Node
	_ = json.Unmarshal(get("/node"), &nd)
	fmt.Println(nd.Kind, nd.Name, nd.Status.Conditions[0].Type, nd.Status.Conditions[0].Status)
	get("/metrics") // no metrics handler given
	fmt.Printf("%s", get("/containerLogs/default/web-node1/app"))
	// Output:
	// /healthz: 200
	// ok
	// /healthz?verbose: 200
	// [+]ping ok
	// [+]syncloop ok
	// healthz check passed
	// /pods: 200
	// PodList default web-node1 Running
	// /node: 200
	// Node node1 Ready True
	// /metrics: 404
	// /containerLogs/default/web-node1/app: 405
	// Debug endpoints are disabled.
}

// With Auth and TLS the server is the secure one (upstream's port 10250):
// here over a self-signed certificate, with bearer tokens checked by a
// TokenAuthenticator (a TokenReview in a cluster) and an authorizer that
// lets the metrics reader read stats only. Serve serves until its context
// ends.
func ExampleServer_Serve() {
	dir, err := os.MkdirTemp("", "kubelet-pki")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	cfg, _, err := server.TLSConfig(server.TLSOptions{CertDir: dir, Host: "localhost"})
	if err != nil {
		fmt.Println(err)
		return
	}
	authn, err := server.NewAuthenticator(server.AuthenticatorOptions{
		Token: server.TokenAuthenticatorFunc(func(_ context.Context, token string) (*server.User, bool, error) {
			return &server.User{Name: "metrics-reader"}, token == "s3cret", nil
		}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	authz := server.AuthorizerFunc(func(_ context.Context, a server.Attributes) (server.Decision, string, error) {
		if a.User.Name == "metrics-reader" && a.Verb == "get" && a.Subresource == "stats" {
			return server.DecisionAllow, "", nil
		}
		return server.DecisionNoOpinion, "", nil
	})
	n := node{unhealthy: errors.New("pleg was last seen active 4m0s ago")}
	srv := server.New(server.Options{Pods: n, Node: n, Health: n, Stats: newFakeNode(), TLS: cfg,
		Auth: &server.Auth{Authenticator: authn, Authorizer: authz}})

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()

	// The client trusts the CA that kubelet.crt ends with.
	crt, _ := os.ReadFile(filepath.Join(dir, "kubelet.crt"))
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(crt)
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "localhost"}}}
	get := func(path, token string) {
		req, _ := http.NewRequest(http.MethodGet, "https://"+l.Addr().String()+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusOK {
			var s statsv1alpha1.Summary
			_ = json.Unmarshal(body, &s)
			body = []byte("summary of " + s.Node.NodeName)
		}
		fmt.Printf("%s %d %s\n", path, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	get("/stats/summary", "")
	get("/stats/summary", "guess")
	get("/stats/summary", "s3cret")
	get("/pods", "s3cret")
	cancel()
	fmt.Println("Serve returned:", <-done)
	// Output:
	// /stats/summary 401 Unauthorized
	// /stats/summary 401 Unauthorized
	// /stats/summary 200 summary of node1
	// /pods 403 Forbidden (user=metrics-reader, verb=get, resource=nodes, subresource(s)=[pods proxy])
	// Serve returned: <nil>
}

// The healthz port answers /healthz with ping alone, as upstream kubelet's
// 127.0.0.1:10248, and nothing else. Run would serve it on Addr, trying
// again every 5s while the port is taken; here its handler is asked
// directly.
func ExampleNewHealthz() {
	h, err := server.NewHealthz(server.HealthzOptions{Addr: "127.0.0.1:10248"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, path := range []string{"/healthz", "/healthz?verbose", "/pods"} {
		rec := httptest.NewRecorder()
		h.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Printf("%s %d %q\n", path, rec.Code, rec.Body.String())
	}
	// Output:
	// /healthz 200 "ok"
	// /healthz?verbose 200 "[+]ping ok\nhealthz check passed\n"
	// /pods 404 "404 page not found\n"
}

// /flagz lists the program's flags and /statusz describes it, as text for
// people or, asked for by kind, as an object. Upstream picks the text's
// delimiter at random for every answer; an example fixes it.
func ExampleZPages() {
	fs := flag.NewFlagSet("mykubelet", flag.ContinueOnError)
	fs.Int("port", 10250, "the kubelet API's port")
	fs.String("token", "", "a secret")
	_ = fs.Parse([]string{"--port=11250", "--token=s3cret"})
	srv := server.New(server.Options{
		Auth: &server.Auth{Authenticator: server.Anonymous{}, Authorizer: server.AlwaysAllow{}},
		ZPages: &server.ZPages{BinaryVersion: "0.1.0", Delimiter: "=",
			Flags: server.FlagSetReader{FlagSet: fs, Classified: []string{"token"}}},
	})
	for _, accept := range []string{"", "application/json;g=config.k8s.io;v=v1beta1;as=Flagz", "application/json"} {
		req := httptest.NewRequest(http.MethodGet, "/flagz", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		fmt.Printf("%d %s\n%s\n", rec.Code, rec.Header().Get("Content-Type"), strings.TrimSpace(rec.Body.String()))
	}
	// Output:
	// 200 text/plain; charset=utf-8
	// kubelet flagz
	// Warning: This endpoint is not meant to be machine parseable, has no formatting compatibility guarantees and is for debugging purposes only.
	// port=11250
	// token=CLASSIFIED
	// 200 application/json;g=config.k8s.io;v=v1beta1;as=Flagz
	// {"kind":"Flagz","apiVersion":"config.k8s.io/v1beta1","metadata":{"name":"kubelet"},"flags":{"port":"11250","token":"CLASSIFIED"}}
	// 406 application/json
	// {"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"only the following media types are accepted: application/json, application/yaml, text/plain","reason":"NotAcceptable","code":406}
}
