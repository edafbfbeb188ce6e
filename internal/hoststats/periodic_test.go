package hoststats

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
)

func TestPeriodic(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	calls := 0
	measure := func() int { calls++; return calls }

	p := NewPeriodic[int](time.Minute)
	assert.Equal(t, 1, p.Get("a", t0, measure), "measured when first seen")
	assert.Equal(t, 1, p.Get("a", t0.Add(59*time.Second), measure), "not within the period")
	assert.Equal(t, 2, p.Get("b", t0.Add(59*time.Second), measure), "another pod is measured on its own")
	assert.Equal(t, 3, p.Get("a", t0.Add(2*time.Minute), measure), "due after the period and at most one period of jitter")
	assert.Equal(t, 2, p.Len())
	p.Retain(func(uid types.UID) bool { return uid == "a" })
	assert.Equal(t, 1, p.Len())
	assert.Equal(t, 4, p.Get("b", t0.Add(2*time.Minute), measure), "forgotten, so measured again")

	every := NewPeriodic[int](0)
	assert.Equal(t, 5, every.Get("a", t0, measure))
	assert.Equal(t, 6, every.Get("a", t0, measure), "no period: every Get")
	assert.Zero(t, every.Len())
}
