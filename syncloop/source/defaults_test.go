package source_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/podspec"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

func TestDefaultPod(t *testing.T) {
	probe := func() *v1.Probe {
		return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Port: intstr.FromInt32(80)}}}
	}
	cases := []struct {
		name  string
		pod   func() *v1.Pod
		check func(t *testing.T, p *v1.Pod)
	}{
		{"restartPolicy Always", bare, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, v1.RestartPolicyAlways, p.Spec.RestartPolicy)
		}},
		{"a given restartPolicy is kept", func() *v1.Pod { p := bare(); p.Spec.RestartPolicy = v1.RestartPolicyNever; return p }, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, v1.RestartPolicyNever, p.Spec.RestartPolicy)
		}},
		{"dnsPolicy ClusterFirst", bare, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, v1.DNSClusterFirst, p.Spec.DNSPolicy)
		}},
		{"terminationGracePeriodSeconds 30", bare, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, ptr.To[int64](30), p.Spec.TerminationGracePeriodSeconds)
		}},
		{"a zero terminationGracePeriodSeconds is kept", func() *v1.Pod {
			p := bare()
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](0)
			return p
		}, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, ptr.To[int64](0), p.Spec.TerminationGracePeriodSeconds)
		}},
		{"schedulerName, securityContext, enableServiceLinks", bare, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, "default-scheduler", p.Spec.SchedulerName)
			assert.Equal(t, &v1.PodSecurityContext{}, p.Spec.SecurityContext)
			assert.Equal(t, ptr.To(true), p.Spec.EnableServiceLinks)
		}},
		{"termination message path and policy in every container", func() *v1.Pod {
			p := bare()
			p.Spec.InitContainers = []v1.Container{{Name: "i", Image: "i:1"}}
			return p
		}, func(t *testing.T, p *v1.Pod) {
			for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
				assert.Equal(t, "/dev/termination-log", c.TerminationMessagePath, c.Name)
				assert.Equal(t, v1.TerminationMessageReadFile, c.TerminationMessagePolicy, c.Name)
			}
		}},
		{"port protocol TCP, hostPort only with hostNetwork", func() *v1.Pod {
			p := bare()
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, Protocol: v1.ProtocolUDP}}
			return p
		}, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, []v1.ContainerPort{{ContainerPort: 80, Protocol: v1.ProtocolTCP}, {ContainerPort: 53, Protocol: v1.ProtocolUDP}}, p.Spec.Containers[0].Ports)
		}},
		{"hostNetwork: hostPort = containerPort", func() *v1.Pod {
			p := bare()
			p.Spec.HostNetwork = true
			p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80}}
			return p
		}, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, int32(80), p.Spec.Containers[0].Ports[0].HostPort)
		}},
		{"probes: timeout 1, period 10, success 1, failure 3, HTTP scheme and path", func() *v1.Pod {
			p := bare()
			c := &p.Spec.Containers[0]
			c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = probe(), probe(), probe()
			c.ReadinessProbe.PeriodSeconds = 2
			return p
		}, func(t *testing.T, p *v1.Pod) {
			c := p.Spec.Containers[0]
			for i, pr := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
				assert.Equal(t, int32(1), pr.TimeoutSeconds, i)
				assert.Equal(t, int32(1), pr.SuccessThreshold, i)
				assert.Equal(t, int32(3), pr.FailureThreshold, i)
				assert.Equal(t, v1.URISchemeHTTP, pr.HTTPGet.Scheme, i)
				assert.Equal(t, "/", pr.HTTPGet.Path, i)
			}
			assert.Equal(t, int32(10), c.LivenessProbe.PeriodSeconds)
			assert.Equal(t, int32(2), c.ReadinessProbe.PeriodSeconds, "a given value is kept")
		}},
		{"requests default to limits", func() *v1.Pod {
			p := bare()
			p.Spec.Containers[0].Resources = v1.ResourceRequirements{
				Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")},
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
			}
			return p
		}, func(t *testing.T, p *v1.Pod) {
			r := p.Spec.Containers[0].Resources.Requests
			assert.Equal(t, "100m", ptr.To(r[v1.ResourceCPU]).String())
			assert.Equal(t, "1Gi", ptr.To(r[v1.ResourceMemory]).String())
		}},
		{"volume modes and hostPath type", func() *v1.Pod {
			p := bare()
			p.Spec.Volumes = []v1.Volume{
				{Name: "s", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "x"}}},
				{Name: "c", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
				{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/x"}}},
			}
			return p
		}, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, ptr.To[int32](0o644), p.Spec.Volumes[0].Secret.DefaultMode)
			assert.Equal(t, ptr.To[int32](0o644), p.Spec.Volumes[1].ConfigMap.DefaultMode)
			assert.Equal(t, ptr.To(v1.HostPathUnset), p.Spec.Volumes[2].HostPath.Type)
		}},
		{"a negative terminationGracePeriodSeconds is 1, as the API server's decoding makes it", func() *v1.Pod {
			p := bare()
			p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](-5)
			return p
		}, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, ptr.To[int64](1), p.Spec.TerminationGracePeriodSeconds)
		}},
		{"a volume with no source is an emptyDir; projected, downwardAPI and image volume defaults", func() *v1.Pod {
			p := bare()
			p.Spec.Volumes = []v1.Volume{
				{Name: "none"},
				{Name: "p", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
					{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "n", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
					{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
				}}}},
				{Name: "img", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "registry/models:v1"}}},
				{Name: "latest", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "registry/models"}}},
			}
			return p
		}, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}, p.Spec.Volumes[0].VolumeSource)
			pr := p.Spec.Volumes[1].Projected
			assert.Equal(t, ptr.To[int32](0o644), pr.DefaultMode)
			assert.Equal(t, "v1", pr.Sources[0].DownwardAPI.Items[0].FieldRef.APIVersion)
			assert.Equal(t, ptr.To[int64](3600), pr.Sources[1].ServiceAccountToken.ExpirationSeconds)
			assert.Equal(t, v1.PullIfNotPresent, p.Spec.Volumes[2].Image.PullPolicy)
			assert.Equal(t, v1.PullAlways, p.Spec.Volumes[3].Image.PullPolicy)
		}},
		{"fieldRef apiVersion v1", func() *v1.Pod {
			p := bare()
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "N", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
			return p
		}, func(t *testing.T, p *v1.Pod) {
			assert.Equal(t, "v1", p.Spec.Containers[0].Env[0].ValueFrom.FieldRef.APIVersion)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.pod()
			source.DefaultPod(p)
			tc.check(t, p)
			again := p.DeepCopy()
			source.DefaultPod(again)
			assert.Equal(t, p, again, "idempotent")
		})
	}
}

func bare() *v1.Pod {
	return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1.36"}}}}
}

func TestPullPolicyForImage(t *testing.T) {
	for image, want := range map[string]v1.PullPolicy{
		"busybox":                          v1.PullAlways,
		"busybox:latest":                   v1.PullAlways,
		"busybox:1.36":                     v1.PullIfNotPresent,
		"docker.io/library/busybox:1.36":   v1.PullIfNotPresent,
		"registry:5000/busybox":            v1.PullAlways,
		"registry:5000/busybox:latest":     v1.PullAlways,
		"registry:5000/busybox:v2":         v1.PullIfNotPresent,
		"busybox@sha256:0123456789abcdef0": v1.PullIfNotPresent,
	} {
		t.Run(image, func(t *testing.T) {
			assert.Equal(t, want, source.PullPolicyForImage(image))
			p := bare()
			p.Spec.Containers[0].Image = image
			source.DefaultPod(p)
			assert.Equal(t, want, p.Spec.Containers[0].ImagePullPolicy)
		})
	}
}

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
	p := bare()
	p.Name = "x"
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
			wantErr: source.ErrInvalidPod, errHas: "metadata.name: Required value"},
		{name: "no containers", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {}\n",
			wantErr: source.ErrInvalidPod, errHas: "spec.containers: Required value"},
		{name: "duplicate container names", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  initContainers: [{name: c, image: i}]\n  containers: [{name: c, image: i}]\n",
			wantErr: source.ErrInvalidPod, errHas: `spec.initContainers[0].name: Duplicate value: "c"`},
		{name: "empty container name and image", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{}]}\n",
			wantErr: source.ErrInvalidPod, errHas: "spec.containers[0].name: Required value, spec.containers[0].image: Required value"},
		{name: "name not DNS-1123", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: Web_1}\nspec: {containers: [{name: c, image: i}]}\n",
			wantErr: source.ErrInvalidPod, errHas: "metadata.name: Invalid value"},
		{name: "container name not DNS-1123", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: C.1, image: i}]}\n",
			wantErr: source.ErrInvalidPod, errHas: "spec.containers[0].name: Invalid value"},
		{name: "bad restartPolicy", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {restartPolicy: Sometimes, containers: [{name: c, image: i}]}\n",
			wantErr: source.ErrInvalidPod, errHas: "spec.restartPolicy: Unsupported value"},
		{name: "one bad pod fails the list", data: list + "- metadata: {name: c}\n  spec: {}\n",
			wantErr: source.ErrInvalidPod, errHas: "item 2"},
		{name: "sleep hook longer than the grace period", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  terminationGracePeriodSeconds: 1\n  containers: [{name: c, image: i, lifecycle: {postStart: {sleep: {seconds: 3}}}}]\n",
			wantErr: source.ErrInvalidPod, errHas: "spec.containers[0].lifecycle.postStart.sleep: Invalid value: 3: must be non-negative and less than terminationGracePeriodSeconds (1)"},
		{name: "negative sleep hook", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  initContainers: [{name: i, image: i, restartPolicy: Always, lifecycle: {preStop: {sleep: {seconds: -1}}}}]\n  containers: [{name: c, image: i}]\n",
			wantErr: source.ErrInvalidPod, errHas: "spec.initContainers[0].lifecycle.preStop.sleep: Invalid value: -1: must be non-negative and less than terminationGracePeriodSeconds (30)"},
		{name: "sleep hook within the default grace period", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i, lifecycle: {preStop: {sleep: {seconds: 30}}}}]}\n",
			want: []string{"x-n"}},
		{name: "a secret reference", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i, env: [{name: A, valueFrom: {secretKeyRef: {name: s, key: k}}}]}]}\n",
			wantErr: source.ErrInvalidPod, errHas: "invalid pod default/x-n: static pods may not reference secrets"},
		// The examples.
		{name: "a negative probe periodSeconds", data: probeManifest("periodSeconds: -5"),
			wantErr: source.ErrInvalidPod, errHas: "invalid pod default/x-n: spec.containers[0].livenessProbe.periodSeconds: Invalid value: -5: must be greater than or equal to 0"},
		{name: "a negative probe timeoutSeconds", data: probeManifest("timeoutSeconds: -1"),
			wantErr: source.ErrInvalidPod, errHas: "spec.containers[0].livenessProbe.timeoutSeconds: Invalid value: -1: must be greater than or equal to 0"},
		{name: "a 5 MB annotation", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x, annotations: {big: " + strings.Repeat("x", 5<<20) + "}}\nspec: {containers: [{name: c, image: i}]}\n",
			wantErr: source.ErrInvalidPod, errHas: "metadata.annotations: Too long: may not be more than 262144 bytes"},
		{name: ".. in a downwardAPI path", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  volumes: [{name: v, downwardAPI: {items: [{path: ../../etc/x, fieldRef: {fieldPath: metadata.name}}]}}]\n  containers: [{name: c, image: i}]\n",
			wantErr: source.ErrInvalidPod, errHas: `spec.volumes[0].downwardAPI.path: Invalid value: "../../etc/x": must not contain '..'`},
		{name: ".. in a subPath", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n  volumes: [{name: v, emptyDir: {}}]\n  containers: [{name: c, image: i, volumeMounts: [{name: v, mountPath: /v, subPath: ../x}]}]\n",
			wantErr: source.ErrInvalidPod, errHas: `spec.containers[0].volumeMounts.subPath: Invalid value: "../x": must not contain '..'`},
		{name: ".. as a configMap key", data: "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {containers: [{name: c, image: i, env: [{name: A, valueFrom: {configMapKeyRef: {name: m, key: ..}}}]}]}\n",
			wantErr: source.ErrInvalidPod, errHas: `spec.containers[0].env[0].valueFrom.configMapKeyRef.key: Invalid value: "..": must not be '..'`},
		{name: "field names are case-sensitive", data: "apiVersion: v1\nkind: Pod\nMetadata: {name: x}\nspec: {containers: [{name: c, image: i}]}\n",
			wantErr: source.ErrInvalidPod, errHas: "metadata.name: Required value"},
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
