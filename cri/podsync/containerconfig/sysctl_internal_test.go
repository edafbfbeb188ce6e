package containerconfig

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
)

func TestSandboxSysctls(t *testing.T) {
	assert.Nil(t, sandboxSysctls(&v1.Pod{}))
	p := &v1.Pod{Spec: v1.PodSpec{SecurityContext: &v1.PodSecurityContext{Sysctls: []v1.Sysctl{
		{Name: "kernel/shm_rmid_forced", Value: "1"}, {Name: "net.ipv4.ip_local_port_range", Value: "1024 65535"}}}}}
	assert.Equal(t, map[string]string{"kernel.shm_rmid_forced": "1", "net.ipv4.ip_local_port_range": "1024 65535"}, sandboxSysctls(p))
}
