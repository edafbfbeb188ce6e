package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// saPod is a load pod as admission leaves it: a projected service-account
// volume that reads kube-root-ca.crt, and a configMap and a secret volume.
func saPod(name string) v1.Pod {
	return v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: "u-1", ResourceVersion: "7",
			Labels: map[string]string{runLabel: "r1"}, Annotations: map[string]string{"a": "b"}},
		Spec: v1.PodSpec{NodeName: "hollow-0000", ServiceAccountName: "default",
			Containers: []v1.Container{{Name: "app", Image: "pause"}},
			Volumes: []v1.Volume{
				{Name: "kube-api-access-x", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
					{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
				}}}},
				{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
				{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec"}}},
			}},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
}

func TestTwinPod(t *testing.T) {
	p := saPod("load-r1-00000")
	got := twinPod(&p, "twins", "kk-node")
	assert.Equal(t, metav1.ObjectMeta{Name: "load-r1-00000", Namespace: "twins",
		Labels: map[string]string{runLabel: "r1"}, Annotations: map[string]string{"a": "b"}}, got.ObjectMeta)
	assert.Equal(t, "kk-node", got.Spec.NodeName)
	assert.Equal(t, v1.PodStatus{}, got.Status)
	want := p.Spec.DeepCopy()
	want.NodeName = "kk-node"
	assert.Equal(t, *want, got.Spec)
	got.Labels["x"] = "y"
	got.Spec.Containers[0].Image = "other"
	assert.Equal(t, map[string]string{runLabel: "r1"}, p.Labels, "the copy shares nothing with the original")
	assert.Equal(t, "pause", p.Spec.Containers[0].Image)
	assert.Equal(t, "hollow-0000", p.Spec.NodeName)
}

func TestVolumeObjects(t *testing.T) {
	assert.Equal(t, []objectRef{{"configmap", "default", "cfg"}, {"configmap", "default", "kube-root-ca.crt"}, {"secret", "default", "sec"}},
		volumeObjects([]v1.Pod{saPod("a"), saPod("b")}))
	assert.Empty(t, volumeObjects([]v1.Pod{{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}}))
}

func TestPrepareNamespace(t *testing.T) {
	ctx := context.Background()
	cl := fake.NewClientset(
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Namespace: "default"}, Data: map[string]string{"ca.crt": "PEM"}},
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"}, Data: map[string]string{"k": "v"}},
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec", Namespace: "default"}, Type: v1.SecretTypeOpaque, Data: map[string][]byte{"s": []byte("x")}},
		// Already there: left as it is.
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "twins"}, Data: map[string]string{"k": "kept"}},
	)
	pods := []v1.Pod{saPod("a")}
	require.NoError(t, prepareNamespace(ctx, cl, "twins", pods))
	require.NoError(t, prepareNamespace(ctx, cl, "twins", pods), "a second time: everything exists")
	_, err := cl.CoreV1().Namespaces().Get(ctx, "twins", metav1.GetOptions{})
	require.NoError(t, err)
	_, err = cl.CoreV1().ServiceAccounts("twins").Get(ctx, "default", metav1.GetOptions{})
	require.NoError(t, err)
	for _, c := range []struct{ name, key, want string }{
		{"kube-root-ca.crt", "ca.crt", "PEM"}, // copied
		{"cfg", "k", "kept"},                  // already there
	} {
		cm, err := cl.CoreV1().ConfigMaps("twins").Get(ctx, c.name, metav1.GetOptions{})
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, cm.Data[c.key], c.name)
	}
	sec, err := cl.CoreV1().Secrets("twins").Get(ctx, "sec", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, []byte("x"), sec.Data["s"])
	assert.Equal(t, v1.SecretTypeOpaque, sec.Type)

	missing := saPod("c")
	missing.Spec.Volumes[1].ConfigMap.Name = "nowhere"
	assert.ErrorContains(t, prepareNamespace(ctx, cl, "twins", []v1.Pod{missing}), "default/nowhere")
}

func TestTwinRefusesBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{"twin", "--kubeconfig", "k", "--to", "n"},
		{"twin", "--kubeconfig", "k", "--from", "n"},
		{"twin", "--kubeconfig", "k", "--from", "a", "--to", "b", "--pods", "-1"},
		{"twin", "--kubeconfig", "k", "--from", "a", "--to", "b", "--timeout", "0s"},
		{"twin", "--kubeconfig", "k", "--from", "a", "--to", "b", "--namespace", ""},
		{"twin", "--from", "a", "--to", "b"}, // no kubeconfig
		{"twin", "--kubeconfig", "k", "--from", "a", "--to", "b", "extra"},
	} {
		var out, errs bytes.Buffer
		assert.Error(t, run(context.Background(), args, &out, &errs), "%v", args)
	}
}
