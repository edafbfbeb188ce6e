package podsync

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"

	"github.com/kubeletkit/kubeletkit/cri"
)

func TestGRPCStyle(t *testing.T) {
	ce := &cri.Error{Method: "ExecSync", Code: codes.NotFound, Message: `container "abc" not found`}
	err := grpcStyle(fmt.Errorf("exec: %w", ce))
	assert.EqualError(t, err, `rpc error: code = NotFound desc = container "abc" not found`, "upstream's CRI client's text")
	assert.ErrorIs(t, err, cri.ErrNotFound, "still the runtime's error underneath")

	plain := errors.New("not a CRI error")
	assert.Same(t, plain, grpcStyle(plain))
}
