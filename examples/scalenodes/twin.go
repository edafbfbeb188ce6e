package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// runTwin gives another node (a single minikubelet) a copy of every pod of
// a farm node, in a namespace of its own under the same names, and waits
// until the copies are Ready: hack/scale.sh then records both nodes' pods
// and compares them by name (hack/fidelity).
func runTwin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("scalenodes twin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the API server (an admin: it creates a namespace and pods)")
	from := fs.String("from", "", "the node whose pods are copied (a farm node); required")
	to := fs.String("to", "", "the node the copies are bound to (it must be Ready); required")
	namespace := fs.String("namespace", "scalenodes-twin", "namespace of the copies, created when missing with what a controller manager would put there")
	limit := fs.Int("pods", 0, "copy only the first this many pods of --from, by name (0: all)")
	timeout := fs.Duration("timeout", 2*time.Minute, "how long --to may take to be Ready, and then the copies")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 || *from == "" || *to == "" || *namespace == "" || *limit < 0 || *timeout <= 0 {
		return fmt.Errorf("twin wants --from, --to and --namespace, --pods=%d not negative, --timeout=%s positive, no arguments", *limit, *timeout)
	}
	cl, err := client(*kubeconfig, 50, 100)
	if err != nil {
		return err
	}
	if err := waitNodesReady(ctx, cl, []string{*to}, *timeout); err != nil {
		return err
	}
	list, err := cl.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", *from).String()})
	if err != nil {
		return fmt.Errorf("list the pods of %s: %w", *from, err)
	}
	pods := list.Items
	slices.SortFunc(pods, func(a, b v1.Pod) int { return strings.Compare(a.Name, b.Name) })
	if *limit > 0 && len(pods) > *limit {
		pods = pods[:*limit]
	}
	if len(pods) == 0 {
		return fmt.Errorf("node %s has no pods to copy", *from)
	}
	if err := prepareNamespace(ctx, cl, *namespace, pods); err != nil {
		return err
	}
	for i := range pods {
		p := twinPod(&pods[i], *namespace, *to)
		if _, err := cl.CoreV1().Pods(*namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %s/%s: %w", *namespace, p.Name, err)
		}
	}
	start := time.Now()
	if err := waitPodsReady(ctx, cl, *namespace, *to, len(pods), *timeout); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "twin: %d pods of %s copied to %s in namespace %s, Ready after %s\n",
		len(pods), *from, *to, *namespace, time.Since(start).Round(time.Millisecond))
	return nil
}

// twinPod is a copy of p bound to node in namespace: the same name, labels,
// annotations and spec (as admission left it: the service account's
// volume, the default tolerations), none of p's status.
func twinPod(p *v1.Pod, namespace, node string) *v1.Pod {
	spec := *p.Spec.DeepCopy()
	spec.NodeName = node
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: namespace,
			Labels: maps.Clone(p.Labels), Annotations: maps.Clone(p.Annotations)},
		Spec: spec,
	}
}

// prepareNamespace creates namespace when it is missing, and in it what
// this control plane's missing controller manager would: the default
// ServiceAccount, and a copy of each ConfigMap and Secret the pods' volumes
// read (kube-root-ca.crt for the service account's volume) from the pod's
// own namespace. What already exists is left as it is.
func prepareNamespace(ctx context.Context, cl kubernetes.Interface, namespace string, pods []v1.Pod) error {
	ignoreExists := func(what string, err error) error {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s: %w", what, err)
		}
		return nil
	}
	_, err := cl.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{})
	if err := ignoreExists("namespace "+namespace, err); err != nil {
		return err
	}
	_, err = cl.CoreV1().ServiceAccounts(namespace).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err := ignoreExists("service account "+namespace+"/default", err); err != nil {
		return err
	}
	for _, ref := range volumeObjects(pods) {
		what := ref.kind + " " + namespace + "/" + ref.name
		switch ref.kind {
		case "configmap":
			src, err := cl.CoreV1().ConfigMaps(ref.namespace).Get(ctx, ref.name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("read %s/%s: %w", ref.namespace, ref.name, err)
			}
			_, err = cl.CoreV1().ConfigMaps(namespace).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ref.name},
				Data: src.Data, BinaryData: src.BinaryData}, metav1.CreateOptions{})
			if err := ignoreExists(what, err); err != nil {
				return err
			}
		case "secret":
			src, err := cl.CoreV1().Secrets(ref.namespace).Get(ctx, ref.name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("read %s/%s: %w", ref.namespace, ref.name, err)
			}
			_, err = cl.CoreV1().Secrets(namespace).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: ref.name},
				Type: src.Type, Data: src.Data}, metav1.CreateOptions{})
			if err := ignoreExists(what, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// objectRef names a ConfigMap or Secret a pod's volume reads.
type objectRef struct{ kind, namespace, name string }

// volumeObjects returns the ConfigMaps and Secrets the pods' volumes read
// (configMap, secret and projected volumes), each once, sorted.
func volumeObjects(pods []v1.Pod) []objectRef {
	seen := map[objectRef]bool{}
	for i := range pods {
		ns := pods[i].Namespace
		for _, vol := range pods[i].Spec.Volumes {
			if vol.ConfigMap != nil {
				seen[objectRef{"configmap", ns, vol.ConfigMap.Name}] = true
			}
			if vol.Secret != nil {
				seen[objectRef{"secret", ns, vol.Secret.SecretName}] = true
			}
			if vol.Projected == nil {
				continue
			}
			for _, s := range vol.Projected.Sources {
				if s.ConfigMap != nil {
					seen[objectRef{"configmap", ns, s.ConfigMap.Name}] = true
				}
				if s.Secret != nil {
					seen[objectRef{"secret", ns, s.Secret.Name}] = true
				}
			}
		}
	}
	out := make([]objectRef, 0, len(seen))
	for r := range seen {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b objectRef) int {
		return strings.Compare(a.kind+"/"+a.namespace+"/"+a.name, b.kind+"/"+b.namespace+"/"+b.name)
	})
	return out
}

// waitPodsReady waits until want pods of namespace bound to node are
// Ready, looking twice a second, for at most timeout.
func waitPodsReady(ctx context.Context, cl kubernetes.Interface, namespace, node string, want int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	ready, last := 0, error(nil)
	for {
		list, err := cl.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{
			FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
		last = err
		if err == nil {
			ready = 0
			for i := range list.Items {
				if podReady(&list.Items[i]) {
					ready++
				}
			}
			if ready >= want {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("%d of %d pods of %s Ready on %s after %s", ready, want, namespace, node, timeout), last)
		case <-tick.C:
		}
	}
}
