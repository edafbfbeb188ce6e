package kubeletconfig_test

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kubeletv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// docs/kubeletconfig.md has one row for every field of the type, and no
// row for a field it does not have: a field a new k8s.io/kubelet adds
// fails here until someone says what the node does with it.
func TestDocListsEveryField(t *testing.T) {
	data, err := os.ReadFile("../docs/kubeletconfig.md")
	require.NoError(t, err)
	rows := map[string]int{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([A-Za-z0-9]+)` \\| ").FindAllStringSubmatch(string(data), -1) {
		rows[m[1]]++
	}
	want := map[string]int{}
	typ := reflect.TypeOf(kubeletv1beta1.KubeletConfiguration{})
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" && !typ.Field(i).Anonymous {
			want[name] = 1
		}
	}
	assert.Equal(t, want, rows)
}
