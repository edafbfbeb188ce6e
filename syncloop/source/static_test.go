package source_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/podspec/validation"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

const webManifest = `apiVersion: v1
kind: Pod
metadata:
  name: web
  labels: {app: web}
spec:
  containers:
  - name: web
    image: busybox:1.36
    ports: [{containerPort: 80}]
`

func readOne(t *testing.T, data, src, location, node string) *v1.Pod {
	t.Helper()
	ps, err := source.ReadManifest([]byte(data), src, location, node)
	require.NoError(t, err)
	require.Len(t, ps, 1)
	return ps[0]
}

func TestStaticDefaults(t *testing.T) {
	p := readOne(t, webManifest, file, "/etc/manifests/web.yaml", "Node-1")
	assert.Equal(t, "web-node-1", p.Name, "suffixed with the node name in lower case")
	assert.Equal(t, "default", p.Namespace)
	assert.Equal(t, "Node-1", p.Spec.NodeName)
	assert.Len(t, string(p.UID), 32, "md5 hex")
	assert.Equal(t, string(p.UID), p.Annotations[podspec.ConfigHashAnnotation])
	assert.Equal(t, "file", p.Annotations[podspec.ConfigSourceAnnotation])
	assert.Equal(t, []v1.Toleration{{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}, p.Spec.Tolerations)
	assert.Equal(t, v1.PodPending, p.Status.Phase)
	assert.Equal(t, v1.ProtocolTCP, p.Spec.Containers[0].Ports[0].Protocol, "API defaults applied")
	assert.Equal(t, map[string]string{"app": "web"}, p.Labels)

	h := readOne(t, webManifest, web, "http://cfg/pods", "node-1")
	assert.Empty(t, h.Spec.Tolerations, "no toleration for pods from a URL, as upstream")
	assert.Equal(t, "http", h.Annotations[podspec.ConfigSourceAnnotation])

	ns := readOne(t, strings.Replace(webManifest, "name: web\n", "name: web\n  namespace: kube-system\n", 1), file, "/m/web.yaml", "n")
	assert.Equal(t, "kube-system", ns.Namespace, "a given namespace is kept")
}

func TestStaticTolerationReplacesAMatchingOne(t *testing.T) {
	p := apiPod("x")
	p.Spec.Tolerations = []v1.Toleration{
		{Key: "k", Operator: v1.TolerationOpEqual, Value: "v", Effect: v1.TaintEffectNoSchedule},
		{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](5)},
	}
	source.ApplyStaticDefaults(p, file, "/m/x.yaml", "n")
	assert.Equal(t, []v1.Toleration{
		{Key: "k", Operator: v1.TolerationOpEqual, Value: "v", Effect: v1.TaintEffectNoSchedule},
		{Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute},
	}, p.Spec.Tolerations)
}

func TestStaticPodUID(t *testing.T) {
	uid := func(data, src, location, node string) string {
		return string(readOne(t, data, src, location, node).UID)
	}
	base := uid(webManifest, file, "/m/web.yaml", "n1")
	assert.Equal(t, base, uid(webManifest, file, "/m/web.yaml", "n1"), "same content, path and node: same UID")
	assert.NotEqual(t, base, uid(webManifest, file, "/m/web.yaml", "n2"), "another node")
	assert.NotEqual(t, base, uid(webManifest, file, "/m/other.yaml", "n1"), "another path")
	assert.NotEqual(t, base, uid(strings.Replace(webManifest, "1.36", "1.37", 1), file, "/m/web.yaml", "n1"), "another content")
	explicit := strings.Replace(webManifest, "spec:\n", "spec:\n  restartPolicy: Always\n  dnsPolicy: ClusterFirst\n", 1)
	assert.Equal(t, base, uid(explicit, file, "/m/web.yaml", "n1"), "writing out a default changes nothing: the defaulted pod is hashed")
	asJSON := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}},
	  "spec":{"containers":[{"name":"web","image":"busybox:1.36","ports":[{"containerPort":80}]}]}}`
	assert.Equal(t, base, uid(asJSON, file, "/m/web.yaml", "n1"), "JSON and YAML of one pod")

	h := uid(webManifest, web, "http://cfg/pods", "n1")
	assert.Equal(t, h, uid(webManifest, web, "http://cfg/pods", "n2"), "upstream: the node is not in a URL pod's hash")
	assert.NotEqual(t, h, uid(webManifest, web, "http://cfg/other", "n1"))

	withUID := strings.Replace(webManifest, "name: web\n", "name: web\n  uid: given\n", 1)
	assert.Equal(t, "given", uid(withUID, file, "/m/web.yaml", "n1"), "a manifest's own UID is kept")
}

// probeManifest is a pod whose container has a liveness probe with extra
// (a "key: value" line).
func probeManifest(extra string) string {
	return "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  containers:\n  - name: c\n    image: i\n    livenessProbe:\n      exec: {command: [\"true\"]}\n      " + extra + "\n"
}

// As upstream, two of the examples are not errors: a negative
// terminationGracePeriodSeconds is taken as 1 (the API server warns), and a
// volume whose only source this API version does not know is an emptyDir.
func TestReadManifestAcceptsWhatUpstreamDefaults(t *testing.T) {
	grace := readOne(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {terminationGracePeriodSeconds: -30, containers: [{name: c, image: i}]}\n", file, "/m/x.yaml", "n")
	assert.Equal(t, ptr.To[int64](1), grace.Spec.TerminationGracePeriodSeconds)

	vol := readOne(t, "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  volumes: [{name: v, futureSource: {size: 1}}]\n  containers: [{name: c, image: i, volumeMounts: [{name: v, mountPath: /v}]}]\n", file, "/m/x.yaml", "n")
	assert.Equal(t, v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}, vol.Spec.Volumes[0].VolumeSource)
}

func TestReadManifest(t *testing.T) {
	list := `apiVersion: v1
kind: PodList
items:
- metadata: {name: a}
  spec: {containers: [{name: c, image: i}]}
- metadata: {name: b}
  spec: {containers: [{name: c, image: i}]}
`
	cases := []struct {
		name    string
		data    string
		want    []string // pod names
		wantErr error
		errHas  string
	}{
		{name: "pod", data: webManifest, want: []string{"web-n"}},
		{name: "pod list", data: list, want: []string{"a-n", "b-n"}},
		{name: "JSON", data: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"j"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, want: []string{"j-n"}},
		{name: "JSON with leading space", data: "\n  {\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"j\"},\"spec\":{\"containers\":[{\"name\":\"c\",\"image\":\"i\"}]}}", want: []string{"j-n"}},
		{name: "bad JSON", data: `{"apiVersion":"v1","kind":"Pod",`, wantErr: source.ErrInvalidManifest, errHas: "not an object"},
		{name: "empty", data: "", wantErr: source.ErrInvalidManifest, errHas: "kind is missing"},
		{name: "bad YAML", data: "kind: Pod\n  bad: [", wantErr: source.ErrInvalidManifest, errHas: "yaml"},
		{name: "not an object", data: "- a\n- b\n", wantErr: source.ErrInvalidManifest, errHas: "not an object"},
		{name: "no kind", data: "apiVersion: v1\nmetadata: {name: x}\n", wantErr: source.ErrInvalidManifest, errHas: "kind is missing"},
		{name: "wrong apiVersion", data: "apiVersion: apps/v1\nkind: Pod\n", wantErr: source.ErrInvalidManifest, errHas: `apiVersion "apps/v1"`},
		{name: "wrong kind", data: "apiVersion: v1\nkind: Service\n", wantErr: source.ErrInvalidManifest, errHas: `kind "Service"`},
		{name: "wrong field type", data: "apiVersion: v1\nkind: Pod\nspec: {containers: 3}\n", wantErr: source.ErrInvalidManifest},
		{name: "missing name", data: "apiVersion: v1\nkind: Pod\nspec: {containers: [{name: c, image: i}]}\n",
			wantErr: validation.ErrInvalidPod, errHas: "metadata.name: Required value"},
		{name: "no containers", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {}\n",
			wantErr: validation.ErrInvalidPod, errHas: "spec.containers: Required value"},
		{name: "duplicate container names", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  initContainers: [{name: c, image: i}]\n  containers: [{name: c, image: i}]\n",
			wantErr: validation.ErrInvalidPod, errHas: `spec.initContainers[0].name: Duplicate value: "c"`},
		{name: "empty container name and image", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{}]}\n",
			wantErr: validation.ErrInvalidPod, errHas: "spec.containers[0].name: Required value, spec.containers[0].image: Required value"},
		{name: "name not DNS-1123", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: Web_1}\nspec: {containers: [{name: c, image: i}]}\n",
			wantErr: validation.ErrInvalidPod, errHas: "metadata.name: Invalid value"},
		{name: "container name not DNS-1123", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: C.1, image: i}]}\n",
			wantErr: validation.ErrInvalidPod, errHas: "spec.containers[0].name: Invalid value"},
		{name: "bad restartPolicy", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {restartPolicy: Sometimes, containers: [{name: c, image: i}]}\n",
			wantErr: validation.ErrInvalidPod, errHas: "spec.restartPolicy: Unsupported value"},
		{name: "one bad pod fails the list", data: list + "- metadata: {name: c}\n  spec: {}\n",
			wantErr: validation.ErrInvalidPod, errHas: "item 2"},
		{name: "sleep hook longer than the grace period", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers: [{name: c, image: i, lifecycle: {postStart: {sleep: {seconds: 3}}}}]\n",
			wantErr: validation.ErrInvalidPod, errHas: "spec.containers[0].lifecycle.postStart.sleep: Invalid value: 3: must be non-negative and less than terminationGracePeriodSeconds (1)"},
		{name: "negative sleep hook", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  initContainers: [{name: i, image: i, restartPolicy: Always, lifecycle: {preStop: {sleep: {seconds: -1}}}}]\n  containers: [{name: c, image: i}]\n",
			wantErr: validation.ErrInvalidPod, errHas: "spec.initContainers[0].lifecycle.preStop.sleep: Invalid value: -1: must be non-negative and less than terminationGracePeriodSeconds (30)"},
		{name: "sleep hook within the default grace period", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i, lifecycle: {preStop: {sleep: {seconds: 30}}}}]}\n",
			want: []string{"x-n"}},
		{name: "a secret reference", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i, env: [{name: A, valueFrom: {secretKeyRef: {name: s, key: k}}}]}]}\n",
			wantErr: validation.ErrInvalidPod, errHas: "invalid pod default/x-n: static pods may not reference secrets"},
		// The examples.
		{name: "a negative probe periodSeconds", data: probeManifest("periodSeconds: -5"),
			wantErr: validation.ErrInvalidPod, errHas: "invalid pod default/x-n: spec.containers[0].livenessProbe.periodSeconds: Invalid value: -5: must be greater than or equal to 0"},
		{name: "a negative probe timeoutSeconds", data: probeManifest("timeoutSeconds: -1"),
			wantErr: validation.ErrInvalidPod, errHas: "spec.containers[0].livenessProbe.timeoutSeconds: Invalid value: -1: must be greater than or equal to 0"},
		{name: "a 5 MB annotation", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x, annotations: {big: " + strings.Repeat("x", 5<<20) + "}}\nspec: {containers: [{name: c, image: i}]}\n",
			wantErr: validation.ErrInvalidPod, errHas: "metadata.annotations: Too long: may not be more than 262144 bytes"},
		{name: ".. in a downwardAPI path", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  volumes: [{name: v, downwardAPI: {items: [{path: ../../etc/x, fieldRef: {fieldPath: metadata.name}}]}}]\n  containers: [{name: c, image: i}]\n",
			wantErr: validation.ErrInvalidPod, errHas: `spec.volumes[0].downwardAPI.path: Invalid value: "../../etc/x": must not contain '..'`},
		{name: ".. in a subPath", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  volumes: [{name: v, emptyDir: {}}]\n  containers: [{name: c, image: i, volumeMounts: [{name: v, mountPath: /v, subPath: ../x}]}]\n",
			wantErr: validation.ErrInvalidPod, errHas: `spec.containers[0].volumeMounts.subPath: Invalid value: "../x": must not contain '..'`},
		{name: ".. as a configMap key", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i, env: [{name: A, valueFrom: {configMapKeyRef: {name: m, key: ..}}}]}]}\n",
			wantErr: validation.ErrInvalidPod, errHas: `spec.containers[0].env[0].valueFrom.configMapKeyRef.key: Invalid value: "..": must not be '..'`},
		{name: "field names are case-sensitive", data: "apiVersion: v1\nkind: Pod\nMetadata: {name: x}\nspec: {containers: [{name: c, image: i}]}\n",
			wantErr: validation.ErrInvalidPod, errHas: "metadata.name: Required value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ps, err := source.ReadManifest([]byte(tc.data), file, "/m/x.yaml", "n")
			if tc.wantErr != nil {
				require.Error(t, err)
				assert.True(t, errors.Is(err, tc.wantErr), "%v is not %v", err, tc.wantErr)
				assert.Contains(t, err.Error(), tc.errHas)
				assert.Nil(t, ps)
				return
			}
			require.NoError(t, err)
			var names []string
			for _, p := range ps {
				names = append(names, p.Name)
			}
			assert.Equal(t, tc.want, names)
		})
	}
}
