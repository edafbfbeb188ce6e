package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/examples/nodefarm"
)

// runHeartbeat samples how old the nodes' Lease renewals are, every
// period, for a while, and prints the percentiles.
func runHeartbeat(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("scalenodes heartbeat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the API server")
	nodes := fs.Int("nodes", 10, "how many nodes")
	prefix := fs.String("node-name-prefix", nodefarm.DefaultNamePrefix, "prefix of the nodes' names")
	d := fs.Duration("for", time.Minute, "how long to sample")
	period := fs.Duration("period", 2*time.Second, "how often to sample every Lease")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 || *nodes < 1 || *d <= 0 || *period <= 0 {
		return fmt.Errorf("--nodes=%d, --for=%s, --period=%s: must be positive, with no arguments", *nodes, *d, *period)
	}
	cl, err := client(*kubeconfig, 50, 100)
	if err != nil {
		return err
	}
	ages, err := leaseAges(ctx, cl, nodeNames(*prefix, *nodes), *d, *period)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "heartbeat: age of the Lease's renewTime, %d nodes over %s: %s\n", *nodes, *d, percentiles(ages))
	return nil
}

// runClean deletes what load runs and nodes left in the API server: the
// pods of every load run (at once, grace period 0), the Nodes and Leases
// whose names have the prefix.
func runClean(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("scalenodes clean", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the API server (an admin)")
	prefix := fs.String("node-name-prefix", nodefarm.DefaultNamePrefix, "prefix of the nodes' names")
	namespace := fs.String("namespace", "default", "namespace of the load's pods")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 || *prefix == "" {
		return fmt.Errorf("clean takes no arguments and a non-empty --node-name-prefix")
	}
	cl, err := client(*kubeconfig, 200, 400)
	if err != nil {
		return err
	}
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	// Deleting 11,000 pods takes the API server longer than a request may
	// last: it answers a timeout and goes on; each call again deletes what
	// is left.
	for attempt := 1; ; attempt++ {
		err := cl.CoreV1().Pods(*namespace).DeleteCollection(ctx, del, metav1.ListOptions{LabelSelector: runLabel})
		if err == nil {
			break
		}
		if !isTimeout(err) || attempt == maxDeleteAttempts {
			return fmt.Errorf("delete the load's pods: %w", err)
		}
		fmt.Fprintf(stdout, "clean: deleting the load's pods, the API server timed out (attempt %d of %d); again\n", attempt, maxDeleteAttempts)
	}
	nodes, err := cl.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	n := 0
	for _, nd := range nodes.Items {
		if strings.HasPrefix(nd.Name, *prefix) {
			if err := cl.CoreV1().Nodes().Delete(ctx, nd.Name, metav1.DeleteOptions{}); err != nil {
				return fmt.Errorf("delete node %s: %w", nd.Name, err)
			}
			// The Lease is the Node's: the garbage collector would remove
			// it, and this control plane may run none.
			if err := cl.CoordinationV1().Leases(v1.NamespaceNodeLease).Delete(ctx, nd.Name, metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
				return fmt.Errorf("delete lease %s: %w", nd.Name, err)
			}
			n++
		}
	}
	fmt.Fprintf(stdout, "clean: the load's pods and %d nodes deleted\n", n)
	return nil
}
