package eviction_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/eviction"
)

func TestParseThresholds(t *testing.T) {
	type want struct {
		str        string
		grace      time.Duration
		minReclaim string
	}
	cases := []struct {
		name                          string
		hard, soft, grace, minReclaim string
		want                          []want
	}{
		{name: "empty"},
		{name: "upstream defaults", hard: "memory.available<100Mi,nodefs.available<10%,nodefs.inodesFree<5%,imagefs.available<15%",
			want: []want{{str: "memory.available<100Mi"}, {str: "nodefs.available<10%"}, {str: "nodefs.inodesFree<5%"}, {str: "imagefs.available<15%"}}},
		{name: "soft with grace and min reclaim", hard: "memory.available<100Mi", soft: "memory.available<1Gi,pid.available<1000",
			grace: "memory.available=1m30s,pid.available=10s", minReclaim: "memory.available=0Mi,nodefs.available=5%",
			want: []want{{str: "memory.available<100Mi", minReclaim: "0"}, {str: "memory.available<1Gi (grace 1m30s)", grace: 90 * time.Second, minReclaim: "0"}, {str: "pid.available<1k (grace 10s)", grace: 10 * time.Second}}},
		{name: "0% and 100% disable", hard: "memory.available<0%,nodefs.available<100%,imagefs.inodesFree<5%",
			want: []want{{str: "imagefs.inodesFree<5%"}}},
		{name: "spaces and allocatable", hard: " allocatableMemory.available<500Mi , ", want: []want{{str: "allocatableMemory.available<500Mi"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := eviction.ParseThresholds(tc.hard, tc.soft, tc.grace, tc.minReclaim)
			require.NoError(t, err)
			require.Len(t, got, len(tc.want))
			for i, w := range tc.want {
				assert.Equal(t, w.str, got[i].String())
				assert.Equal(t, w.grace, got[i].GracePeriod)
				assert.Equal(t, w.grace == 0, got[i].IsHard())
				assert.Equal(t, eviction.OpLessThan, got[i].Operator)
				if w.minReclaim == "" {
					assert.Nil(t, got[i].MinReclaim)
				} else {
					require.NotNil(t, got[i].MinReclaim)
					assert.Equal(t, w.minReclaim, got[i].MinReclaim.String())
				}
			}
		})
	}
}

func TestParseThresholdsErrors(t *testing.T) {
	cases := []struct {
		name                          string
		hard, soft, grace, minReclaim string
		want                          string
	}{
		{name: "unknown signal", hard: "memory.free<1Gi", want: `eviction-hard: unsupported eviction signal "memory.free"`},
		{name: "wrong operator", hard: "memory.available>1Gi", want: `invalid eviction threshold syntax "memory.available>1Gi"`},
		{name: "two operators", hard: "memory.available<1Gi<2Gi", want: "invalid eviction threshold syntax"},
		{name: "duplicate", hard: "memory.available<1Gi,memory.available<2Gi", want: "duplicate eviction threshold for signal memory.available"},
		{name: "zero quantity", hard: "memory.available<0", want: "signal memory.available: threshold must be positive: 0"},
		{name: "negative quantity", hard: "memory.available<-1Mi", want: "threshold must be positive"},
		{name: "bad quantity", hard: "memory.available<lots", want: `invalid quantity "lots"`},
		{name: "percentage over 100", hard: "nodefs.available<101%", want: "must be <= 100%: 101%"},
		{name: "negative percentage", hard: "nodefs.available<-5%", want: "must be >= 0%"},
		{name: "bad percentage", hard: "nodefs.available<x%", want: `invalid percentage "x%"`},
		{name: "soft without grace", soft: "memory.available<1Gi", want: "grace period must be specified for the soft eviction threshold memory.available"},
		{name: "bad grace syntax", soft: "memory.available<1Gi", grace: "memory.available:1m", want: "eviction-soft-grace-period: invalid syntax"},
		{name: "bad grace duration", soft: "memory.available<1Gi", grace: "memory.available=soon", want: "eviction-soft-grace-period: signal memory.available"},
		{name: "negative grace", soft: "memory.available<1Gi", grace: "memory.available=-1s", want: "must be a positive value"},
		{name: "duplicate grace", soft: "memory.available<1Gi", grace: "memory.available=1s,memory.available=2s", want: "duplicate grace period"},
		{name: "grace unknown signal", grace: "cpu.available=1s", want: `unsupported eviction signal "cpu.available"`},
		{name: "min reclaim negative", minReclaim: "memory.available=-1Mi", want: "must not be negative"},
		{name: "min reclaim syntax", minReclaim: "memory.available<1Mi", want: "eviction-minimum-reclaim: invalid syntax"},
		{name: "min reclaim duplicate", minReclaim: "memory.available=1Mi,memory.available=2Mi", want: "duplicate minimum reclaim"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := eviction.ParseThresholds(tc.hard, tc.soft, tc.grace, tc.minReclaim)
			require.Error(t, err)
			assert.True(t, errors.Is(err, eviction.ErrInvalidThreshold), "%v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestDefaultHardThresholds(t *testing.T) {
	var got []string
	for _, th := range eviction.DefaultHardThresholds() {
		assert.True(t, th.IsHard())
		got = append(got, th.String())
	}
	assert.Equal(t, []string{"memory.available<100Mi", "nodefs.available<10%", "nodefs.inodesFree<5%", "imagefs.available<15%"}, got)
	// The defaults are fresh values each time.
	a, b := eviction.DefaultHardThresholds(), eviction.DefaultHardThresholds()
	a[0].Value.Quantity.Set(1)
	assert.Equal(t, "100Mi", b[0].Value.Quantity.String())
}

func TestAddAllocatableThresholds(t *testing.T) {
	ts, err := eviction.ParseThresholds("memory.available<100Mi,nodefs.available<10%", "memory.available<1Gi", "memory.available=1m", "memory.available=50Mi")
	require.NoError(t, err)
	got := eviction.AddAllocatableThresholds(ts)
	require.Len(t, got, 4)
	assert.Len(t, ts, 3, "input untouched")
	assert.Equal(t, "allocatableMemory.available<100Mi", got[3].String())
	assert.True(t, got[3].IsHard())
	assert.Equal(t, "50Mi", got[3].MinReclaim.String())
}
