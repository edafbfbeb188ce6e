package validation_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeletkit/kubeletkit/podspec/validation"
)

// The fuzz target runs its seeds as an ordinary test; CI fuzzes it for a
// bounded time:
//
//	go test -run '^$' -fuzz '^FuzzValidatePod$' -fuzztime 30s ./podspec/validation/
//
// Its seeds are validPod and the cases of TestValidatePodAsTheAPIServer in
// JSON (but for the one of 5 MB), and a few pods in YAML. Package syncloop/source fuzzes the whole
// path of a static manifest (FuzzDecodeManifest), validation included.

// FuzzValidatePod feeds arbitrary pods (bytes decoded as a v1.Pod, in JSON
// or YAML) to ValidatePod, as they are and defaulted: it must never panic;
// an error wraps ErrInvalidPod; a pod it accepts is valid again after a
// JSON round trip.
func FuzzValidatePod(f *testing.F) {
	for _, tc := range podCases() {
		p := validPod()
		tc.break_(p)
		data, err := json.Marshal(p)
		require.NoError(f, err)
		if len(data) > 64<<10 {
			continue // the 5 MB annotation: a fuzzer crawls through it
		}
		f.Add(data)
	}
	for _, s := range []string{
		"metadata: {name: web}\nspec:\n  containers: [{name: web, image: nginx:1.27, ports: [{containerPort: 80}]}]\n",
		"metadata: {name: x}\nspec:\n  containers:\n  - name: c\n    image: i\n    livenessProbe: {exec: {command: [\"true\"]}, periodSeconds: -1}\n",
		"metadata: {name: x}\nspec:\n  volumes: [{name: v, hostPath: {path: /srv/../etc}}]\n  containers: [{name: c, image: i, volumeMounts: [{name: v, mountPath: /v, subPath: ../x}]}]\n",
		"metadata: {name: Bad_Name}\nspec: {restartPolicy: Sometimes, containers: [{name: c}, {name: c, image: i}]}\n",
		"spec: {}\n", "{}", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var pod v1.Pod
		if yaml.Unmarshal(data, &pod) != nil {
			return
		}
		check := func(p *v1.Pod) {
			if err := validation.ValidatePod(p); err != nil {
				require.ErrorIs(t, err, validation.ErrInvalidPod)
				return
			}
			data, err := json.Marshal(p)
			require.NoError(t, err)
			var back v1.Pod
			require.NoError(t, json.Unmarshal(data, &back))
			assert.NoError(t, validation.ValidatePod(&back), "valid again after a JSON round trip: %s", data)
		}
		check(pod.DeepCopy())
		validation.DefaultPod(&pod)
		check(&pod)
	})
}
