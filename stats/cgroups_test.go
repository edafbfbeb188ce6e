package stats_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kubeletkit/kubeletkit/stats"
)

func TestContainerCgroup(t *testing.T) {
	cases := []struct {
		name     string
		children []string
		id       string
		want     string
	}{
		{name: "containerd, cgroupfs", children: []string{"abc", "abcdef"}, id: "abcdef", want: "abcdef"},
		{name: "containerd, systemd", children: []string{"cri-containerd-abc.scope", "cri-containerd-abcdef.scope"}, id: "abc",
			want: "cri-containerd-abc.scope"},
		{name: "CRI-O, systemd", children: []string{"crio-conmon-abc.scope", "crio-abc.scope"}, id: "abc", want: "crio-conmon-abc.scope"},
		{name: "CRI-O, cgroupfs", children: []string{"crio-abc"}, id: "abc", want: "crio-abc"},
		{name: "a prefix is not a match", children: []string{"cri-containerd-abcdef.scope", "abcdef"}, id: "abc"},
		{name: "no ID", children: []string{"x-"}, id: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := stats.ContainerCgroup(tc.children, tc.id)
			assert.Equal(t, tc.want != "", ok)
			assert.Equal(t, tc.want, got)
		})
	}
}
