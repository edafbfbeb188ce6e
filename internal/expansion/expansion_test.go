package expansion_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/kubeletkit/kubeletkit/internal/expansion"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestExpand(t *testing.T) {
	vars := map[string]string{"POD": "web", "NS": "default", "EMPTY": ""}
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"$(POD)", "web"},
		{"logs/$(NS)/$(POD).log", "logs/default/web.log"},
		{"$(UNKNOWN)", "$(UNKNOWN)"},
		{"$$(POD)", "$(POD)"},
		{"$$$(POD)", "$web"},
		{"cost: $5", "cost: $5"},
		{"trailing $", "trailing $"},
		{"$(POD", "$(POD"},
		{"$()", "$()"},
		{"[$(EMPTY)]", "[]"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, expansion.Expand(tt.in, vars), tt.in)
	}
	assert.Nil(t, expansion.ExpandAll(nil, vars))
	assert.Equal(t, []string{"web", "x"}, expansion.ExpandAll([]string{"$(POD)", "x"}, vars))
}

func ExampleExpand() {
	fmt.Println(expansion.Expand("/data/$(POD_NAME) costs $$(PRICE)", map[string]string{"POD_NAME": "web-0"}))
	// Output: /data/web-0 costs $(PRICE)
}
