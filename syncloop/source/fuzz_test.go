package source_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec/validation"
	"github.com/kubeletkit/kubeletkit/syncloop"
	"github.com/kubeletkit/kubeletkit/syncloop/source"
)

// The fuzz target runs its seeds as an ordinary test; CI fuzzes it for a
// bounded time (and package podspec/validation's FuzzValidatePod, the
// validator alone):
//
//	go test -run '^$' -fuzz '^FuzzDecodeManifest$' -fuzztime 30s ./syncloop/source/
//
// The seeds are the manifests in testdata/manifests (TestSeedManifests
// says what each is) and the manifests of the other tests.

// TestSeedManifests pins what the seed manifests are: web.yaml uses most
// of the fields validation.ValidatePod checks and is valid; list.json is a
// PodList in JSON whose second pod has a volume with a source this API
// version does not know (an emptyDir once defaulted, as upstream);
// nodes.yaml uses host network, a stop signal and container restart rules;
// invalid.yaml breaks many rules at once.
func TestSeedManifests(t *testing.T) {
	for _, tt := range []struct {
		file string
		pods int
		errs []string
	}{
		{"web.yaml", 1, nil},
		{"list.json", 2, nil},
		{"nodes.yaml", 1, nil},
		{"invalid.yaml", 0, []string{
			`spec.volumes[0].configMap.items[0].path: Invalid value: "../../etc/passwd": must not contain '..'`,
			"spec.volumes[1].hostPath: Forbidden: may not specify more than 1 volume type",
			`spec.containers[0].volumeMounts.subPath: Invalid value: "/abs": must be a relative path`,
			"spec.containers[0].resources.requests: Invalid value: \"2\": must be less than or equal to cpu limit of 1",
			"spec.containers[0].lifecycle.preStop.sleep: Invalid value: 99: must be non-negative and less than terminationGracePeriodSeconds (1)",
			"spec.containers[0].livenessProbe.periodSeconds: Invalid value: -1: must be greater than or equal to 0",
			`spec.containers[1].name: Duplicate value: "app"`,
		}},
	} {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "manifests", tt.file))
			require.NoError(t, err)
			pods, err := source.ReadManifest(data, syncloop.SourceFile, "/m/"+tt.file, "node-1")
			assert.Len(t, pods, tt.pods)
			if tt.errs == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, validation.ErrInvalidPod)
			for _, e := range tt.errs {
				assert.Contains(t, err.Error(), e)
			}
		})
	}
}

// seeds returns the manifests of testdata/manifests.
func seeds(f *testing.F) [][]byte {
	f.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "manifests", "*"))
	require.NoError(f, err)
	require.NotEmpty(f, files)
	var out [][]byte
	for _, file := range files {
		data, err := os.ReadFile(file)
		require.NoError(f, err)
		out = append(out, data)
	}
	return append(out, []byte(webManifest), []byte(manifest("a", "i")), []byte(badYAML), []byte(noName),
		[]byte(noContainers), []byte(dupContainers), []byte(probeManifest("periodSeconds: -1")), []byte(""), []byte("{}"))
}

// FuzzDecodeManifest feeds bytes to the whole path of a static manifest:
// DecodeManifest, validation.DefaultPod, ApplyStaticDefaults and
// validation.ValidatePod (ReadManifest). It must never panic; an error wraps
// ErrInvalidManifest or validation.ErrInvalidPod; the pods it accepts are
// valid again after a JSON round trip and unchanged by defaulting again.
func FuzzDecodeManifest(f *testing.F) {
	for _, s := range seeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := source.DecodeManifest(data); err != nil {
			require.ErrorIs(t, err, source.ErrInvalidManifest)
			require.Empty(t, source.ManifestWarnings(data), "a manifest that does not decode has no warnings")
		}
		pods, err := source.ReadManifest(data, syncloop.SourceFile, "/etc/kubernetes/manifests/x.yaml", "node-1")
		if err != nil {
			require.True(t, errors.Is(err, source.ErrInvalidManifest) || errors.Is(err, validation.ErrInvalidPod),
				"%v wraps neither ErrInvalidManifest nor ErrInvalidPod", err)
			require.Nil(t, pods)
			return
		}
		for _, p := range pods {
			again := p.DeepCopy()
			validation.DefaultPod(again)
			require.Equal(t, p, again, "defaulting an accepted pod again changes nothing")
			revalidate(t, p)
		}
	})
}

// revalidate encodes an accepted pod as JSON, decodes it and validates it
// again.
func revalidate(t *testing.T, p *v1.Pod) {
	t.Helper()
	data, err := json.Marshal(p)
	require.NoError(t, err)
	var back v1.Pod
	require.NoError(t, json.Unmarshal(data, &back))
	assert.NoError(t, validation.ValidatePod(&back), "%s", data)
}
