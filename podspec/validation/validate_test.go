package validation_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/kubeletkit/kubeletkit/podspec/validation"
)

// validPod is a defaulted pod ValidatePod accepts, with the fields the
// cases break: volumes 0 data (emptyDir, mounted with a subPath), 1 conf
// (configMap item, mounted), 2 info (downwardAPI, unmounted), 3 host
// (hostPath, unmounted); one init container; container 0 "web" with a
// port, env, resources, two mounts, three probes and a preStop sleep.
func validPod() *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"team": "edge"}},
		Spec: v1.PodSpec{
			Volumes: []v1.Volume{
				{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}},
				{Name: "conf", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
					LocalObjectReference: v1.LocalObjectReference{Name: "app"}, Items: []v1.KeyToPath{{Key: "k", Path: "conf/app.yaml"}}}}},
				{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
					Items: []v1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}},
				{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/var/log"}}},
			},
			InitContainers: []v1.Container{{Name: "init", Image: "busybox:1.36", Command: []string{"true"}}},
			Containers: []v1.Container{{
				Name: "web", Image: "nginx:1.27",
				Ports: []v1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				Env: []v1.EnvVar{{Name: "MODE", Value: "edge"},
					{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				Resources: v1.ResourceRequirements{
					Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
					Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("128Mi")},
				},
				VolumeMounts:  []v1.VolumeMount{{Name: "data", MountPath: "/data", SubPath: "www"}, {Name: "conf", MountPath: "/etc/app"}},
				LivenessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(8080)}}},
				ReadinessProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{
					HTTPGet: &v1.HTTPGetAction{Port: intstr.FromString("http")}}},
				StartupProbe: &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}},
				Lifecycle:    &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: 5}}},
			}},
		},
	}
	validation.DefaultPod(p)
	return p
}

// Upstream's long messages, from k8s.io/apimachinery's validators.
const (
	subdomainMsg = `a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
	labelMsg     = `a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`
	labelValue   = `a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`
	portRange    = "must be between 1 and 65535, inclusive"
	idRange      = "must be between 0 and 2147483647, inclusive"
	modeMsg      = "must be a number between 0 and 0777 (octal), both inclusive"
	envNameMsg   = "a valid environment variable name must consist only of printable ASCII characters other than '='"
	headerMsg    = `a valid HTTP header must consist of alphanumeric characters or '-' (e.g. 'X-Header-Name', regex used for validation is '[-A-Za-z0-9]+')`
	configKeyMsg = `a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`
	notSidecar   = "may not be set for init containers without restartPolicy=Always"
	hostPathList = `supported values: "", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"`
	// A mount of a volume that is invalid is not found, as upstream.
	confNotFound = `spec.containers[0].volumeMounts[1].name: Not found: "conf"`
)

// Fields the API server refuses are refused in static pods too, with
// upstream's field paths and messages (the cases are drawn from upstream's
// validation tests: TestValidatePodSpec, TestValidateContainers,
// TestValidateInitContainers, TestValidateVolumes, TestValidateVolumeMounts,
// TestValidatePorts, TestValidateEnv, TestValidateEnvFrom, Test_validateProbe,
// TestValidateHandler, TestValidatePodDNSConfig, TestValidateResourceNames,
// ...). Each case breaks one field of validPod and lists every error, in
// order.
func TestValidatePodAsTheAPIServer(t *testing.T) {
	for _, tt := range podCases() {
		t.Run(tt.name, func(t *testing.T) {
			p := validPod()
			tt.break_(p)
			err := validation.ValidatePod(p)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, validation.ErrInvalidPod))
			want := tt.want[0]
			if len(tt.want) > 1 {
				want = "[" + strings.Join(tt.want, ", ") + "]"
			}
			ref := p.Name
			if p.Namespace != "" {
				ref = p.Namespace + "/" + ref
			}
			assert.Equal(t, "invalid pod "+ref+": "+want, err.Error())
		})
	}
}

// podCase breaks one field of validPod (break_) and lists every error
// ValidatePod then reports, in order (none for a valid pod).
type podCase struct {
	name   string
	break_ func(p *v1.Pod)
	want   []string
}

// podCases are TestValidatePodAsTheAPIServer's cases, and seeds of
// FuzzValidatePod.
func podCases() []podCase {
	c0 := func(p *v1.Pod) *v1.Container { return &p.Spec.Containers[0] }
	vol := func(i int) func(p *v1.Pod) *v1.VolumeSource {
		return func(p *v1.Pod) *v1.VolumeSource { return &p.Spec.Volumes[i].VolumeSource }
	}
	conf, info, host := vol(1), vol(2), vol(3)
	q := resource.MustParse
	return []podCase{
		{"valid", func(*v1.Pod) {}, nil},

		// metadata
		{"name not a DNS subdomain", func(p *v1.Pod) { p.Name = "Web_1" },
			[]string{`metadata.name: Invalid value: "Web_1": ` + subdomainMsg}},
		{"no namespace", func(p *v1.Pod) { p.Namespace = "" }, []string{"metadata.namespace: Required value"}},
		{"namespace not a DNS label", func(p *v1.Pod) { p.Namespace = "kube.system" },
			[]string{`metadata.namespace: Invalid value: "kube.system": must not contain dots`}},
		{"invalid label value", func(p *v1.Pod) { p.Labels["app"] = "not valid!" },
			[]string{`metadata.labels: Invalid value: "not valid!": ` + labelValue}},
		{"annotations over 256 KiB (the issue's 5 MB one)", func(p *v1.Pod) { p.Annotations["big"] = strings.Repeat("x", 5<<20) },
			[]string{"metadata.annotations: Too long: may not be more than 262144 bytes"}},

		// pod spec
		{"no terminationGracePeriodSeconds", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = nil },
			[]string{"spec.terminationGracePeriodSeconds: Required value"}},
		{"activeDeadlineSeconds 0", func(p *v1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](0) },
			[]string{"spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"}},
		{"unknown restartPolicy", func(p *v1.Pod) { p.Spec.RestartPolicy = "Sometimes" },
			[]string{`spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"`}},
		{"unknown dnsPolicy", func(p *v1.Pod) { p.Spec.DNSPolicy = "Sometimes" },
			[]string{`spec.dnsPolicy: Unsupported value: "Sometimes": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`}},
		{"dnsPolicy None without dnsConfig", func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSNone },
			[]string{"spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"}},
		{"dnsConfig with 4 nameservers, a bad one, a bad search and an unnamed option", func(p *v1.Pod) {
			p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "8.8.8.8", "9.9.9.9", "1.2.3"},
				Searches: []string{"ok.local.", "_ok", "-bad"}, Options: []v1.PodDNSConfigOption{{}}}
		}, []string{
			`spec.dnsConfig.nameservers: Invalid value: ["1.1.1.1","8.8.8.8","9.9.9.9","1.2.3"]: must not have more than 3 nameservers`,
			`spec.dnsConfig.nameservers[3]: Invalid value: "1.2.3": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
			`spec.dnsConfig.searches[2]: Invalid value: "-bad": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*')`,
			"spec.dnsConfig.options[0]: Required value: must not be empty",
		}},
		{"hostname and subdomain not DNS labels", func(p *v1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "Web_1", "a.b" },
			[]string{`spec.hostname: Invalid value: "Web_1": ` + labelMsg, `spec.subdomain: Invalid value: "a.b": must not contain dots`}},
		{"hostAliases", func(p *v1.Pod) {
			p.Spec.HostAliases = []v1.HostAlias{{IP: "10.0.0.300", Hostnames: []string{"ok.local", "Not_OK"}}}
		},
			[]string{
				`spec.hostAliases[0].ip: Invalid value: "10.0.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
				`spec.hostAliases[0].hostnames[1]: Invalid value: "Not_OK": ` + subdomainMsg,
			}},
		{"hostNetwork with a hostPort other than the containerPort", func(p *v1.Pod) {
			p.Spec.HostNetwork = true
			c0(p).Ports[0].HostPort = 80
		}, []string{"spec.containers[0].ports[0].hostPort: Invalid value: 80: must match `containerPort` when `hostNetwork` is true"}},
		{"security context IDs", func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To[int64](-1), FSGroup: ptr.To[int64](-2), SupplementalGroups: []int64{1, -3}}
		}, []string{
			"spec.securityContext.fsGroup: Invalid value: -2: " + idRange,
			"spec.securityContext.runAsUser: Invalid value: -1: " + idRange,
			"spec.securityContext.supplementalGroups[1]: Invalid value: -3: " + idRange,
		}},
		{"shareProcessNamespace with hostPID", func(p *v1.Pod) { p.Spec.HostPID, p.Spec.ShareProcessNamespace = true, ptr.To(true) },
			[]string{"spec.securityContext.shareProcessNamespace: Invalid value: true: ShareProcessNamespace and HostPID cannot both be enabled"}},
		{"unknown os", func(p *v1.Pod) { p.Spec.OS = &v1.PodOS{Name: "plan9"} },
			[]string{`spec.os: Unsupported value: "plan9": supported values: "linux", "windows"`}},
		{"runtimeClassName not a DNS subdomain", func(p *v1.Pod) { p.Spec.RuntimeClassName = ptr.To("Kata_1") },
			[]string{`spec.runtimeClassName: Invalid value: "Kata_1": ` + subdomainMsg}},
		{"ephemeral containers cannot be set on create", func(p *v1.Pod) {
			p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: "busybox:1.36",
				ImagePullPolicy: v1.PullIfNotPresent, TerminationMessagePolicy: v1.TerminationMessageReadFile}}}
		}, []string{"spec.ephemeralContainers: Forbidden: cannot be set on create"}},

		// volumes
		{"a volume with no source", func(p *v1.Pod) { *host(p) = v1.VolumeSource{} },
			[]string{"spec.volumes[3]: Required value: must specify a volume type"}},
		{"a volume with two sources: the second in upstream's order is forbidden", func(p *v1.Pod) { host(p).EmptyDir = &v1.EmptyDirVolumeSource{} },
			[]string{"spec.volumes[3].hostPath: Forbidden: may not specify more than 1 volume type"}},
		{"a volume name used twice", func(p *v1.Pod) { p.Spec.Volumes[3].Name = "data" },
			[]string{`spec.volumes[3].name: Duplicate value: "data"`}},
		{"a volume name not a DNS label, and its mount", func(p *v1.Pod) { p.Spec.Volumes[0].Name = "Data" },
			[]string{`spec.volumes[0].name: Invalid value: "Data": ` + labelMsg, `spec.containers[0].volumeMounts[0].name: Not found: "data"`}},
		{"a mount of an invalid volume is not found", func(p *v1.Pod) { conf(p).ConfigMap.Name = "" },
			[]string{"spec.volumes[1].configMap.name: Required value", `spec.containers[0].volumeMounts[1].name: Not found: "conf"`}},
		{"hostPath without a path", func(p *v1.Pod) { host(p).HostPath.Path = "" }, []string{"spec.volumes[3].hostPath.path: Required value"}},
		{"hostPath with ..", func(p *v1.Pod) { host(p).HostPath.Path = "/var/../etc" },
			[]string{`spec.volumes[3].hostPath.path: Invalid value: "/var/../etc": must not contain '..'`}},
		{"hostPath of an unknown type", func(p *v1.Pod) { host(p).HostPath.Type = ptr.To[v1.HostPathType]("Pipe") },
			[]string{`spec.volumes[3].hostPath.type: Unsupported value: "Pipe": ` + hostPathList}},
		{"a configMap item path with ..", func(p *v1.Pod) { conf(p).ConfigMap.Items[0].Path = "a/../../etc" },
			[]string{`spec.volumes[1].configMap.items[0].path: Invalid value: "a/../../etc": must not contain '..'`, confNotFound}},
		{"a configMap item path starting with ..", func(p *v1.Pod) { conf(p).ConfigMap.Items[0].Path = "..data" },
			[]string{`spec.volumes[1].configMap.items[0].path: Invalid value: "..data": must not start with '..'`, confNotFound}},
		{"a configMap item with no key and an absolute path", func(p *v1.Pod) { conf(p).ConfigMap.Items[0] = v1.KeyToPath{Path: "/etc/passwd"} },
			[]string{"spec.volumes[1].configMap.items[0].key: Required value",
				`spec.volumes[1].configMap.items[0].path: Invalid value: "/etc/passwd": must be a relative path`, confNotFound}},
		{"a configMap item with no path", func(p *v1.Pod) { conf(p).ConfigMap.Items[0].Path = "" },
			[]string{"spec.volumes[1].configMap.items[0].path: Required value", confNotFound}},
		{"modes out of range", func(p *v1.Pod) {
			conf(p).ConfigMap.DefaultMode = ptr.To[int32](0o1000)
			conf(p).ConfigMap.Items[0].Mode = ptr.To[int32](-1)
		}, []string{"spec.volumes[1].configMap.defaultMode: Invalid value: 512: " + modeMsg, "spec.volumes[1].configMap.items[0].mode: Invalid value: -1: " + modeMsg, confNotFound}},
		{"a secret without a name", func(p *v1.Pod) {
			*host(p) = v1.VolumeSource{Secret: &v1.SecretVolumeSource{DefaultMode: ptr.To[int32](0o644)}}
		}, []string{"spec.volumes[3].secret.secretName: Required value"}},
		{"a downwardAPI path with .. (upstream's path has no item index)", func(p *v1.Pod) { info(p).DownwardAPI.Items[0].Path = "../labels" },
			[]string{`spec.volumes[2].downwardAPI.path: Invalid value: "../labels": must not contain '..'`}},
		{"a downwardAPI field a volume cannot show", func(p *v1.Pod) { info(p).DownwardAPI.Items[0].FieldRef.FieldPath = "spec.nodeName" },
			[]string{`spec.volumes[2].downwardAPI.fieldRef.fieldPath: Unsupported value: "spec.nodeName": supported values: "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid"`}},
		{"a downwardAPI item with neither fieldRef nor resourceFieldRef", func(p *v1.Pod) { info(p).DownwardAPI.Items[0].FieldRef = nil },
			[]string{"spec.volumes[2].downwardAPI: Required value: one of fieldRef and resourceFieldRef is required"}},
		{"a downwardAPI resourceFieldRef without a container and with a bad divisor", func(p *v1.Pod) {
			info(p).DownwardAPI.Items[0] = v1.DownwardAPIVolumeFile{Path: "cpu",
				ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: q("10m")}}
		}, []string{"spec.volumes[2].downwardAPI.resourceFieldRef.containerName: Required value",
			`spec.volumes[2].downwardAPI.resourceFieldRef.divisor: Invalid value: "limits.cpu": only divisor's values 1m and 1 are supported with the cpu resource`}},
		{"projected: .., a conflicting path, two kinds in a source", func(p *v1.Pod) {
			*info(p) = v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []v1.VolumeProjection{
				{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{
					{Path: "../labels", FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels"}}}}},
				{ConfigMap: &v1.ConfigMapProjection{LocalObjectReference: v1.LocalObjectReference{Name: "a"}, Items: []v1.KeyToPath{{Key: "k", Path: "x"}}},
					Secret: &v1.SecretProjection{LocalObjectReference: v1.LocalObjectReference{Name: "b"}, Items: []v1.KeyToPath{{Key: "k", Path: "x"}}}},
			}}}
		}, []string{
			`spec.volumes[2].projected.sources[0].downwardAPI.path: Invalid value: "../labels": must not contain '..'`,
			`spec.volumes[2].projected: Invalid value: "a": conflicting duplicate paths`,
			"spec.volumes[2].projected.sources[1]: Forbidden: may not specify more than 1 volume type per source",
		}},
		{"a negative emptyDir sizeLimit", func(p *v1.Pod) { p.Spec.Volumes[0].EmptyDir.SizeLimit = ptr.To(q("-1Gi")) },
			[]string{"spec.volumes[0].emptyDir.sizeLimit: Forbidden: SizeLimit field must be a valid resource quantity",
				`spec.containers[0].volumeMounts[0].name: Not found: "data"`}},
		{"nfs with a relative path", func(p *v1.Pod) { *host(p) = v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "nas", Path: "exports"}} },
			[]string{`spec.volumes[3].nfs.path: Invalid value: "exports": must be an absolute path`}},
		{"csi without a driver", func(p *v1.Pod) { *host(p) = v1.VolumeSource{CSI: &v1.CSIVolumeSource{}} },
			[]string{"spec.volumes[3].csi.driver: Required value"}},
		{"an image volume without a reference", func(p *v1.Pod) {
			*host(p) = v1.VolumeSource{Image: &v1.ImageVolumeSource{PullPolicy: v1.PullIfNotPresent}}
		}, []string{"spec.volumes[3].image.reference: Required value"}},

		// volume mounts
		{"a mount of no volume", func(p *v1.Pod) { c0(p).VolumeMounts[1].Name = "nope" },
			[]string{`spec.containers[0].volumeMounts[1].name: Not found: "nope"`}},
		{"two mounts at one path", func(p *v1.Pod) { c0(p).VolumeMounts[1].MountPath = "/data" },
			[]string{`spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/data": must be unique`}},
		{"a subPath with .. (upstream's path has no mount index)", func(p *v1.Pod) { c0(p).VolumeMounts[0].SubPath = "../../etc" },
			[]string{`spec.containers[0].volumeMounts.subPath: Invalid value: "../../etc": must not contain '..'`}},
		{"an absolute subPath", func(p *v1.Pod) { c0(p).VolumeMounts[0].SubPath = "/etc" },
			[]string{`spec.containers[0].volumeMounts.subPath: Invalid value: "/etc": must be a relative path`}},
		{"subPath and subPathExpr", func(p *v1.Pod) { c0(p).VolumeMounts[0].SubPathExpr = "$(POD)" },
			[]string{`spec.containers[0].volumeMounts[0].subPathExpr: Invalid value: "$(POD)": subPathExpr and subPath are mutually exclusive`}},
		{"Bidirectional propagation in an unprivileged container", func(p *v1.Pod) {
			c0(p).VolumeMounts[0].MountPropagation = ptr.To(v1.MountPropagationBidirectional)
		}, []string{"spec.containers[0].volumeMounts.mountPropagation: Forbidden: Bidirectional mount propagation is available only to privileged containers"}},
		{"recursiveReadOnly on a writable mount", func(p *v1.Pod) { c0(p).VolumeMounts[0].RecursiveReadOnly = ptr.To(v1.RecursiveReadOnlyEnabled) },
			[]string{"spec.containers[0].volumeMounts.recursiveReadOnly: Forbidden: may only be specified when readOnly is true"}},

		// containers
		{"no containers", func(p *v1.Pod) { p.Spec.Containers = nil }, []string{"spec.containers: Required value"}},
		{"no container name, no image", func(p *v1.Pod) { c0(p).Name, c0(p).Image = "", "" },
			[]string{"spec.containers[0].name: Required value", "spec.containers[0].image: Required value"}},
		{"container name not a DNS label", func(p *v1.Pod) { c0(p).Name = "Web.1" },
			[]string{`spec.containers[0].name: Invalid value: "Web.1": ` + labelMsg}},
		{"two containers with one name", func(p *v1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "web", Image: "i:1", ImagePullPolicy: v1.PullIfNotPresent,
				TerminationMessagePolicy: v1.TerminationMessageReadFile})
		}, []string{`spec.containers[1].name: Duplicate value: "web"`}},
		{"an init container named as a container", func(p *v1.Pod) { p.Spec.InitContainers[0].Name = "web" },
			[]string{`spec.initContainers[0].name: Duplicate value: "web"`}},
		{"an image with spaces around", func(p *v1.Pod) { c0(p).Image = " nginx:1.27 " },
			[]string{`spec.containers[0].image: Invalid value: " nginx:1.27 ": must not have leading or trailing whitespace`}},
		{"unknown imagePullPolicy and terminationMessagePolicy", func(p *v1.Pod) { c0(p).ImagePullPolicy, c0(p).TerminationMessagePolicy = "Sometimes", "Stdout" },
			[]string{`spec.containers[0].terminationMessagePolicy: Unsupported value: "Stdout": supported values: "File", "FallbackToLogsOnError"`,
				`spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never"`}},
		{"ports out of range, unnamed well, no protocol", func(p *v1.Pod) {
			c0(p).Ports = []v1.ContainerPort{
				{Name: "web_port", ContainerPort: 70000, HostPort: -1, Protocol: v1.ProtocolTCP},
				{Name: "http", Protocol: "HTTP"},
				{Name: "http", ContainerPort: 81},
			}
		}, []string{
			`spec.containers[0].ports[0].name: Invalid value: "web_port": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)`,
			"spec.containers[0].ports[0].containerPort: Invalid value: 70000: " + portRange,
			"spec.containers[0].ports[0].hostPort: Invalid value: -1: " + portRange,
			"spec.containers[0].ports[1].containerPort: Required value",
			`spec.containers[0].ports[1].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"`,
			`spec.containers[0].ports[2].name: Duplicate value: "http"`,
			"spec.containers[0].ports[2].protocol: Required value",
		}},
		{"one host port twice", func(p *v1.Pod) {
			c0(p).Ports[0].HostPort = 80
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side", Image: "i:1", ImagePullPolicy: v1.PullIfNotPresent,
				TerminationMessagePolicy: v1.TerminationMessageReadFile, Ports: []v1.ContainerPort{{ContainerPort: 81, HostPort: 80, Protocol: v1.ProtocolTCP}}})
		}, []string{`spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//80"`}},
		{"env names and sources", func(p *v1.Pod) {
			c0(p).Env = []v1.EnvVar{
				{Name: ""},
				{Name: "A=B"},
				{Name: "C", Value: "x", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
				{Name: "D", ValueFrom: &v1.EnvVarSource{}},
				{Name: "E", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.phase"}}},
				{Name: "F", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}}},
				{Name: "G", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "c"}, Key: "a/b"}}},
				{Name: "H", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.gpu"}}},
				{Name: "I", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.labels['app']"}}},
			}
		}, []string{
			"spec.containers[0].env[0].name: Required value",
			`spec.containers[0].env[1].name: Invalid value: "A=B": ` + envNameMsg,
			`spec.containers[0].env[2].valueFrom: Invalid value: "": may not be specified when ` + "`value`" + ` is not empty`,
			`spec.containers[0].env[3].valueFrom: Invalid value: "": must specify one of: ` + "`fieldRef`, `resourceFieldRef`, `configMapKeyRef`, `secretKeyRef` or `fileKeyRef`",
			`spec.containers[0].env[4].valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase": supported values: "metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"`,
			`spec.containers[0].env[5].valueFrom.fieldRef.fieldPath: Invalid value: "metadata.name": error converting fieldPath: unsupported pod version: v2`,
			`spec.containers[0].env[6].valueFrom.configMapKeyRef.key: Invalid value: "a/b": ` + configKeyMsg,
			`spec.containers[0].env[7].valueFrom.resourceFieldRef.resource: Unsupported value: "limits.gpu": supported values: "limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu", "requests.ephemeral-storage", "requests.memory"`,
		}},
		{"a fileKeyRef to a volume that is not an emptyDir", func(p *v1.Pod) {
			c0(p).Env = []v1.EnvVar{{Name: "K", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{VolumeName: "conf", Path: "env", Key: "K"}}}}
		}, []string{`spec.containers[0].env[0].valueFrom.fileKeyRef.volumeName: Invalid value: "conf": referenced volume must be of type emptyDir`}},
		{"envFrom with no source and a bad prefix", func(p *v1.Pod) { c0(p).EnvFrom = []v1.EnvFromSource{{Prefix: "A="}} },
			[]string{`spec.containers[0].envFrom[0].prefix: Invalid value: "A=": ` + envNameMsg,
				`spec.containers[0].envFrom: Invalid value: "": must specify one of: ` + "`configMapRef` or `secretRef`"}},

		// resources
		{"a negative limit", func(p *v1.Pod) { c0(p).Resources.Limits[v1.ResourceMemory] = q("-1Mi") },
			[]string{`spec.containers[0].resources.limits[memory]: Invalid value: "-1Mi": must be greater than or equal to 0`,
				// The request, defaulted from the limit before it broke.
				`spec.containers[0].resources.requests: Invalid value: "128Mi": must be less than or equal to memory limit of -1Mi`}},
		{"a request over its limit", func(p *v1.Pod) { c0(p).Resources.Requests[v1.ResourceCPU] = q("2") },
			[]string{`spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1`}},
		{"an unknown resource name", func(p *v1.Pod) { c0(p).Resources.Limits["disk"] = q("1Gi") },
			[]string{`spec.containers[0].resources.limits[disk]: Invalid value: "disk": must be a standard resource type or fully qualified`,
				`spec.containers[0].resources.limits[disk]: Invalid value: "disk": must be a standard resource for containers`}},
		{"an extended resource: a fraction, a request without limit", func(p *v1.Pod) {
			c0(p).Resources.Limits["example.com/gpu"] = q("500m")
			c0(p).Resources.Requests["example.com/fpga"] = q("1")
		}, []string{
			`spec.containers[0].resources.limits[example.com/gpu]: Invalid value: "500m": must be an integer`,
			"spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources",
		}},
		{"huge pages not a whole number of pages, without cpu or memory", func(p *v1.Pod) {
			c0(p).Resources = v1.ResourceRequirements{Limits: v1.ResourceList{"hugepages-2Mi": q("3Mi")}}
		}, []string{
			`spec.containers[0].resources.limits[hugepages-2Mi]: Invalid value: "3Mi": 3Mi is not positive integer multiple of hugepages-2Mi`,
			"spec.containers[0].resources: Forbidden: HugePages require cpu or memory",
		}},
		{"pod-level resources of an unsupported name", func(p *v1.Pod) {
			p.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceEphemeralStorage: q("1Gi")}}
		}, []string{`spec.resources.limits[ephemeral-storage]: Unsupported value: "ephemeral-storage": supported values: "cpu", "hugepages-", "memory"`}},

		// probes and lifecycle handlers
		{"a negative periodSeconds (the issue's example)", func(p *v1.Pod) { c0(p).LivenessProbe.PeriodSeconds = -1 },
			[]string{"spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0"}},
		{"every probe number negative", func(p *v1.Pod) {
			pr := c0(p).ReadinessProbe
			pr.InitialDelaySeconds, pr.TimeoutSeconds, pr.PeriodSeconds, pr.SuccessThreshold, pr.FailureThreshold = -1, -2, -3, -4, -5
		}, []string{
			"spec.containers[0].readinessProbe.initialDelaySeconds: Invalid value: -1: must be greater than or equal to 0",
			"spec.containers[0].readinessProbe.timeoutSeconds: Invalid value: -2: must be greater than or equal to 0",
			"spec.containers[0].readinessProbe.periodSeconds: Invalid value: -3: must be greater than or equal to 0",
			"spec.containers[0].readinessProbe.successThreshold: Invalid value: -4: must be greater than or equal to 0",
			"spec.containers[0].readinessProbe.failureThreshold: Invalid value: -5: must be greater than or equal to 0",
		}},
		{"liveness and startup successThreshold other than 1", func(p *v1.Pod) { c0(p).LivenessProbe.SuccessThreshold, c0(p).StartupProbe.SuccessThreshold = 2, 3 },
			[]string{"spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
				"spec.containers[0].startupProbe.successThreshold: Invalid value: 3: must be 1"}},
		{"probe terminationGracePeriodSeconds: 0, and on a readiness probe", func(p *v1.Pod) {
			c0(p).LivenessProbe.TerminationGracePeriodSeconds = ptr.To[int64](0)
			c0(p).ReadinessProbe.TerminationGracePeriodSeconds = ptr.To[int64](10)
		}, []string{
			"spec.containers[0].livenessProbe.terminationGracePeriodSeconds: Invalid value: 0: must be greater than 0",
			"spec.containers[0].readinessProbe.terminationGracePeriodSeconds: Invalid value: 10: must not be set for readinessProbes",
		}},
		{"a probe with no handler, one with two", func(p *v1.Pod) {
			c0(p).LivenessProbe.TCPSocket = nil
			c0(p).StartupProbe.GRPC = &v1.GRPCAction{Port: 9000}
		}, []string{
			"spec.containers[0].livenessProbe: Required value: must specify a handler type",
			"spec.containers[0].startupProbe.grpc: Forbidden: may not specify more than 1 handler type",
		}},
		{"handler details", func(p *v1.Pod) {
			c0(p).StartupProbe.Exec.Command = nil
			c0(p).ReadinessProbe.HTTPGet = &v1.HTTPGetAction{Port: intstr.FromInt32(0), Scheme: "FTP", HTTPHeaders: []v1.HTTPHeader{{Name: "bad header"}}}
			c0(p).LivenessProbe.TCPSocket.Port = intstr.FromString("web_port")
		}, []string{
			"spec.containers[0].livenessProbe.tcpSocket.port: Invalid value: \"web_port\": must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
			"spec.containers[0].readinessProbe.httpGet.path: Required value",
			"spec.containers[0].readinessProbe.httpGet.port: Invalid value: 0: " + portRange,
			`spec.containers[0].readinessProbe.httpGet.scheme: Unsupported value: "FTP": supported values: "HTTP", "HTTPS"`,
			`spec.containers[0].readinessProbe.httpGet.httpHeaders: Invalid value: "bad header": ` + headerMsg,
			"spec.containers[0].startupProbe.exec.command: Required value",
		}},
		{"sleep hooks: longer than the grace period, negative", func(p *v1.Pod) {
			c0(p).Lifecycle.PreStop.Sleep.Seconds = 31
			c0(p).Lifecycle.PostStart = &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: -1}}
		}, []string{
			"spec.containers[0].lifecycle.postStart.sleep: Invalid value: -1: must be non-negative and less than terminationGracePeriodSeconds (30)",
			"spec.containers[0].lifecycle.preStop.sleep: Invalid value: 31: must be non-negative and less than terminationGracePeriodSeconds (30)",
		}},
		{"a hook with no handler, a stop signal without spec.os", func(p *v1.Pod) {
			c0(p).Lifecycle.PreStop = &v1.LifecycleHandler{}
			c0(p).Lifecycle.StopSignal = ptr.To(v1.SIGUSR1)
		}, []string{
			"spec.containers[0].lifecycle.preStop: Required value: must specify a handler type",
			"spec.containers[0].lifecycle.stopSignal: Forbidden: may not be set for containers with empty `spec.os.name`",
		}},

		// init containers and restart policies
		{"an init container with probes and hooks", func(p *v1.Pod) {
			ic := &p.Spec.InitContainers[0]
			ic.Lifecycle, ic.ReadinessProbe = c0(p).Lifecycle, c0(p).ReadinessProbe
		}, []string{"spec.initContainers[0].lifecycle: Forbidden: " + notSidecar, "spec.initContainers[0].readinessProbe: Forbidden: " + notSidecar}},
		{"a sidecar's probe is checked", func(p *v1.Pod) {
			ic := &p.Spec.InitContainers[0]
			ic.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
			ic.LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}},
				TimeoutSeconds: 1, PeriodSeconds: -10, SuccessThreshold: 1, FailureThreshold: 3}
		}, []string{"spec.initContainers[0].livenessProbe.periodSeconds: Invalid value: -10: must be greater than or equal to 0"}},
		{"container restart policies and rules", func(p *v1.Pod) {
			p.Spec.InitContainers[0].RestartPolicy = ptr.To[v1.ContainerRestartPolicy]("Sometimes")
			c0(p).RestartPolicyRules = []v1.ContainerRestartRule{{Action: "Reboot"}}
		}, []string{
			"spec.containers[0].restartPolicy: Required value: must specify restartPolicy when restart rules are used",
			`spec.containers[0].restartPolicyRules[0].action: Unsupported value: "Reboot": supported values: "Restart", "RestartAllContainers"`,
			"spec.containers[0].restartPolicyRules[0].exitCodes: Required value: must be specified",
			`spec.initContainers[0].restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "OnFailure"`,
		}},
		{"container security context", func(p *v1.Pod) {
			c0(p).SecurityContext = &v1.SecurityContext{RunAsGroup: ptr.To[int64](-1), ProcMount: ptr.To[v1.ProcMountType]("Masked")}
		}, []string{
			"spec.containers[0].securityContext.runAsGroup: Invalid value: -1: " + idRange,
			`spec.containers[0].securityContext.procMount: Unsupported value: "Masked": supported values: "Default", "Unmasked"`,
		}},
		{"an unmasked /proc in the host's user namespace", func(p *v1.Pod) {
			c0(p).SecurityContext = &v1.SecurityContext{ProcMount: ptr.To(v1.UnmaskedProcMount)}
		}, []string{"spec.containers[0].securityContext.procMount: Invalid value: \"Unmasked\": `hostUsers` must be false to use `Unmasked`"}},
		{"a Localhost seccomp profile outside the profile directory", func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("/etc/x.json")}}
			c0(p).SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("../../x.json")}}
		}, []string{
			`spec.containers[0].securityContext.seccompProfile.localhostProfile: Invalid value: "../../x.json": must not contain '..'`,
			`spec.securityContext.seccompProfile.localhostProfile: Invalid value: "/etc/x.json": must be a relative path`,
		}},
		{"seccomp profiles without a type or a name", func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{}}
			c0(p).SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}}
		}, []string{
			"spec.containers[0].securityContext.seccompProfile.localhostProfile: Required value: must be set when seccomp type is Localhost",
			"spec.securityContext.seccompProfile.type: Required value: type is required when seccompProfile is set",
		}},
		{"AppArmor profiles and the groups policy", func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: "Strict"},
				SupplementalGroupsPolicy: ptr.To[v1.SupplementalGroupsPolicy]("Loose")}
			c0(p).SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To(" deny ")}}
		}, []string{
			`spec.containers[0].securityContext.appArmorProfile.localhostProfile: Invalid value: " deny ": must not be padded with whitespace`,
			`spec.securityContext.appArmorProfile.type: Unsupported value: "Strict": supported values: "Localhost", "RuntimeDefault", "Unconfined"`,
			`spec.securityContext.supplementalGroupsPolicy: Unsupported value: "Loose": supported values: "Merge", "Strict"`,
		}},
	}
}
