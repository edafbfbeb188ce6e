package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// The server's handler, mounted in an httptest server, answers the
// read-only endpoints.
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
	fmt.Printf("%s", get("/healthz"))
	var pods v1.PodList
	_ = json.Unmarshal(get("/pods"), &pods)
	for _, p := range pods.Items {
		fmt.Println(pods.Kind, p.Namespace, p.Name, p.Status.Phase)
	}
	var nd v1.Node
	_ = json.Unmarshal(get("/node"), &nd)
	fmt.Println(nd.Kind, nd.Name, nd.Status.Conditions[0].Type, nd.Status.Conditions[0].Status)
	get("/metrics") // no metrics handler given
	// Output:
	// /healthz: 200
	// ok
	// /pods: 200
	// PodList default web-node1 Running
	// /node: 200
	// Node node1 Ready True
	// /metrics: 404
}

// Serve serves on a listener until its context ends; a failing health
// check shows its reasons.
func ExampleServer_Serve() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	n := node{unhealthy: errors.New("[-]pleg failed: pleg was last seen active 4m0s ago")}
	srv := server.New(server.Options{Pods: n, Node: n, Health: n})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, l) }()

	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get("http://" + l.Addr().String() + "/healthz")
	if err != nil {
		fmt.Println(err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%d %s", resp.StatusCode, body)
	}
	cancel()
	fmt.Println("Serve returned:", <-done)
	// Output:
	// 500 [-]pleg failed: pleg was last seen active 4m0s ago
	// Serve returned: <nil>
}
