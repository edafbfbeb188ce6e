package podspec_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/podspec"
)

func TestQOSClass(t *testing.T) {
	both := func(cpu, mem string) v1.ResourceList { return list("cpu", cpu, "memory", mem) }
	ctr := func(req, lim v1.ResourceList) v1.Container {
		return v1.Container{Name: "c", Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want v1.PodQOSClass
	}{
		{"nothing requested or limited", podOf(ctr(nil, nil)), v1.PodQOSBestEffort},
		{"zero requests count as none", podOf(ctr(list("cpu", "0"), nil)), v1.PodQOSBestEffort},
		{"requests equal limits", podOf(ctr(both("1", "1Gi"), both("1", "1Gi"))), v1.PodQOSGuaranteed},
		// The API server defaults requests to limits; undefaulted, as upstream,
		// limits alone are Burstable.
		{"limits alone, undefaulted", podOf(ctr(nil, both("1", "1Gi"))), v1.PodQOSBurstable},
		{"limits above requests", podOf(ctr(both("1", "1Gi"), both("2", "1Gi"))), v1.PodQOSBurstable},
		{"requests alone", podOf(ctr(list("cpu", "1"), nil)), v1.PodQOSBurstable},
		{"memory not limited", podOf(ctr(list("cpu", "1"), list("cpu", "1"))), v1.PodQOSBurstable},
		{"one container of two limited", podOf(ctr(both("1", "1Gi"), both("1", "1Gi")), ctr(nil, nil)), v1.PodQOSBurstable},
		{"an init container counts", func() *v1.Pod {
			p := podOf(ctr(both("1", "1Gi"), both("1", "1Gi")))
			p.Spec.InitContainers = []v1.Container{ctr(list("cpu", "1"), nil)}
			return p
		}(), v1.PodQOSBurstable},
		{"pod-level resources decide", func() *v1.Pod {
			p := podOf(ctr(nil, nil))
			p.Spec.Resources = &v1.ResourceRequirements{Requests: both("1", "1Gi"), Limits: both("1", "1Gi")}
			return p
		}(), v1.PodQOSGuaranteed},
		{"pod-level limits of cpu alone", func() *v1.Pod {
			p := podOf(ctr(nil, nil))
			p.Spec.Resources = &v1.ResourceRequirements{Requests: both("1", "1Gi"), Limits: list("cpu", "2")}
			return p
		}(), v1.PodQOSBurstable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, podspec.ComputeQOSClass(tc.pod))
			assert.Equal(t, tc.want, podspec.QOSClass(tc.pod))
		})
	}
	t.Run("the status's class is kept", func(t *testing.T) {
		p := podOf(ctr(nil, nil))
		p.Status.QOSClass = v1.PodQOSGuaranteed
		assert.Equal(t, v1.PodQOSGuaranteed, podspec.QOSClass(p))
		assert.Equal(t, v1.PodQOSBestEffort, podspec.ComputeQOSClass(p))
	})
}
