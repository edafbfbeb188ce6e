package upstreambench

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAnchorCountsEvents: on the benchmark's workload, upstream delivers
// every event of a relist that fits its channel and drops the rest (a relist
// of 1,500 pods that each lose a container makes 3,000 events for 1,000
// slots), while pleg delivers them all, from the channel and to OnEvents.
func TestAnchorCountsEvents(t *testing.T) {
	tests := []struct {
		subject string
		pods    int
		// want is how many events reach the consumer from the first relist
		// (every pod's sandbox and two containers started), then from the
		// relists that add and remove the third container.
		want []int
	}{
		{"upstream", 300, []int{900, 300, 600}},
		{"upstream", 1500, []int{1000, 1000, 1000}},
		{"kubeletkit", 1500, []int{4500, 1500, 3000}},
		{"kubeletkit-onevents", 1500, []int{4500, 1500, 3000}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/pods=%d", tt.subject, tt.pods), func(t *testing.T) {
			var newSubject func(testing.TB, relistRuntime) subject
			for _, s := range subjects {
				if s.name == tt.subject {
					newSubject = s.new
				}
			}
			n := newFakeNode(t, tt.pods)
			p := newSubject(t, n.runtime())
			produced := 3 * tt.pods
			for i, want := range tt.want {
				if i > 0 {
					produced = n.change(t)
				}
				p.relist(t)
				assert.Equal(t, want, p.collect(t, produced), "relist %d", i+1)
			}
		})
	}
}
