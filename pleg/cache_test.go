package pleg

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/cri"
)

var t0 = time.Unix(1000, 0)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func status(uid types.UID, name string) *cri.PodStatus {
	return &cri.PodStatus{UID: uid, Name: name}
}

func TestCacheWritesKeepTheNewest(t *testing.T) {
	type op struct {
		del  bool
		name string
		ts   int
		want bool // accepted
	}
	tests := []struct {
		name     string
		ops      []op
		wantName string // "" means the empty status
	}{
		{"first write", []op{{name: "a", ts: 5, want: true}}, "a"},
		{"newer replaces", []op{{name: "a", ts: 5, want: true}, {name: "b", ts: 6, want: true}}, "b"},
		{"same time replaces", []op{{name: "a", ts: 5, want: true}, {name: "b", ts: 5, want: true}}, "b"},
		{"older is refused", []op{{name: "a", ts: 5, want: true}, {name: "b", ts: 4, want: false}}, "a"},
		{"delete", []op{{name: "a", ts: 5, want: true}, {del: true, ts: 6, want: true}}, ""},
		{"older delete is refused", []op{{name: "a", ts: 5, want: true}, {del: true, ts: 4, want: false}}, "a"},
		{"a late write cannot resurrect a deleted pod", []op{{name: "a", ts: 5, want: true}, {del: true, ts: 6, want: true}, {name: "late", ts: 6, want: false}}, ""},
		{"a newer write after a delete is a new sandbox", []op{{del: true, ts: 6, want: true}, {name: "new", ts: 7, want: true}}, "new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache()
			for i, o := range tt.ops {
				var got bool
				if o.del {
					got = c.Delete("p", at(o.ts))
				} else {
					got = c.Set("p", status("p", o.name), nil, at(o.ts))
				}
				assert.Equal(t, o.want, got, "op %d", i)
			}
			st, err := c.Get("p")
			require.NoError(t, err)
			assert.Equal(t, types.UID("p"), st.UID)
			assert.Equal(t, tt.wantName, st.Name)
		})
	}
}

func TestCacheKeepsInspectionErrors(t *testing.T) {
	c := NewCache()
	boom := errors.New("boom")
	c.Set("p", nil, boom, at(1))
	st, err := c.Get("p")
	assert.Nil(t, st)
	assert.ErrorIs(t, err, boom)
}

func TestCacheTombstonesExpire(t *testing.T) {
	c := NewCache()
	c.Delete("p", at(10))
	c.UpdateTime(at(10).Add(tombstoneTTL - time.Second))
	assert.False(t, c.Set("p", status("p", "late"), nil, at(9)), "still refused within the TTL")
	c.UpdateTime(at(10).Add(tombstoneTTL))
	assert.Empty(t, c.pods, "the tombstone is gone")
	assert.Empty(t, c.tombs)
	assert.True(t, c.Set("p", status("p", "late"), nil, at(9)), "a forgotten pod takes any write")
}

func TestCacheGlobalTimeOnlyMovesForward(t *testing.T) {
	c := NewCache()
	assert.True(t, c.Time().IsZero())
	c.UpdateTime(at(5))
	c.UpdateTime(at(3))
	assert.Equal(t, at(5), c.Time())
}

func TestCacheGetNewerThan(t *testing.T) {
	tests := []struct {
		name string
		// before the wait
		set, global int // 0: none
		// during the wait
		thenSet, thenGlobal int
		wantName            string
		wantBlock           bool // still waiting after "during"
	}{
		{name: "entry newer: at once", set: 11, wantName: "set"},
		{name: "global newer: at once, with the entry", set: 5, global: 11, wantName: "set"},
		{name: "global newer, no entry: the empty status", global: 11, wantName: ""},
		{name: "entry exactly at t is not newer", set: 10, thenSet: 10, wantName: "", wantBlock: true},
		{name: "global exactly at t is not newer", global: 10, thenGlobal: 10, wantBlock: true},
		{name: "a newer write wakes the waiter", set: 5, thenSet: 12, wantName: "then"},
		{name: "a newer global time wakes the waiter", set: 5, thenGlobal: 12, wantName: "set"},
		{name: "an older write does not", set: 5, thenSet: 8, wantBlock: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := NewCache()
				if tt.set != 0 {
					c.Set("p", status("p", "set"), nil, at(tt.set))
				}
				if tt.global != 0 {
					c.UpdateTime(at(tt.global))
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				type result struct {
					st  *cri.PodStatus
					err error
				}
				done := make(chan result, 1)
				go func() {
					st, err := c.GetNewerThan(ctx, "p", at(10))
					done <- result{st, err}
				}()
				synctest.Wait()
				if tt.thenSet != 0 {
					c.Set("p", status("p", "then"), nil, at(tt.thenSet))
				}
				if tt.thenGlobal != 0 {
					c.UpdateTime(at(tt.thenGlobal))
				}
				synctest.Wait()
				select {
				case r := <-done:
					require.False(t, tt.wantBlock, "returned but should still wait")
					require.NoError(t, r.err)
					assert.Equal(t, tt.wantName, r.st.Name)
				default:
					require.True(t, tt.wantBlock, "still waiting")
					cancel()
					r := <-done
					assert.ErrorIs(t, r.err, context.Canceled)
					assert.Empty(t, c.waiters, "a cancelled waiter is forgotten")
				}
			})
		})
	}
}

func TestCacheWaitedOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := NewCache()
		ctx, cancel := context.WithCancel(t.Context())
		for _, w := range []struct {
			uid types.UID
			t   int
		}{{"b", 5}, {"a", 5}, {"c", 20}, {"a", 7}} {
			go func() { _, _ = c.GetNewerThan(ctx, w.uid, at(w.t)) }()
		}
		synctest.Wait()
		select {
		case <-c.waited:
		default:
			t.Fatal("a new waiter signals")
		}
		assert.Equal(t, []types.UID{"a", "b"}, c.waitedOn(at(10)), "pods waited past a time before now, sorted, once each")
		assert.Empty(t, c.waitedOn(at(5)), "a wait for newer than now cannot be served yet")
		c.Set("a", status("a", "x"), nil, at(10))
		synctest.Wait()
		assert.Equal(t, []types.UID{"b"}, c.waitedOn(at(10)))
		cancel()
		synctest.Wait()
		assert.Empty(t, c.waiters)
	})
}
