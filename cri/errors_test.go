package cri_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kubeletkit/kubeletkit/cri"
)

func TestToStatus(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want codes.Code
	}{
		{"not found", fmt.Errorf("container %q: %w", "abc", cri.ErrNotFound), codes.NotFound},
		{"already exists", fmt.Errorf("name reserved: %w", cri.ErrAlreadyExists), codes.AlreadyExists},
		{"invalid", cri.ErrInvalidArgument, codes.InvalidArgument},
		{"precondition", fmt.Errorf("x: %w", cri.ErrFailedPrecondition), codes.FailedPrecondition},
		{"unimplemented", cri.ErrUnimplemented, codes.Unimplemented},
		{"timeout", cri.ErrTimeout, codes.DeadlineExceeded},
		{"unavailable", cri.ErrUnavailable, codes.Unavailable},
		{"ctx deadline", fmt.Errorf("pull: %w", context.DeadlineExceeded), codes.DeadlineExceeded},
		{"ctx canceled", context.Canceled, codes.Canceled},
		{"grpc status kept", status.Error(codes.ResourceExhausted, "too many"), codes.ResourceExhausted},
		{"cri error kept", &cri.Error{Method: "X", Code: codes.PermissionDenied, Message: "no"}, codes.PermissionDenied},
		{"other", errors.New("boom"), codes.Unknown},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := cri.ToStatus(tt.err)
			assert.Equal(t, tt.want, st.Code())
			assert.Equal(t, tt.err.Error(), st.Message())
		})
	}
	assert.Nil(t, cri.ToStatus(nil))
}

func TestErrorIs(t *testing.T) {
	sentinels := map[codes.Code]error{
		codes.NotFound:           cri.ErrNotFound,
		codes.AlreadyExists:      cri.ErrAlreadyExists,
		codes.InvalidArgument:    cri.ErrInvalidArgument,
		codes.FailedPrecondition: cri.ErrFailedPrecondition,
		codes.Unimplemented:      cri.ErrUnimplemented,
		codes.DeadlineExceeded:   cri.ErrTimeout,
		codes.Unavailable:        cri.ErrUnavailable,
	}
	for code, sentinel := range sentinels {
		t.Run(code.String(), func(t *testing.T) {
			err := fmt.Errorf("wrapped: %w", &cri.Error{Method: "ContainerStatus", Code: code, Message: "msg"})
			assert.ErrorIs(t, err, sentinel)
			for other, s := range sentinels {
				if other != code {
					assert.NotErrorIs(t, err, s)
				}
			}
			assert.Equal(t, code, status.Code(err), "the gRPC code survives wrapping")
		})
	}
	err := &cri.Error{Method: "ContainerStatus", Code: codes.NotFound, Message: `container "abc": not found`}
	assert.Equal(t, `cri ContainerStatus: NotFound: container "abc": not found`, err.Error())
	assert.NotErrorIs(t, &cri.Error{Code: codes.Internal}, cri.ErrNotFound)
}

func TestRuntimeMessage(t *testing.T) {
	runtimeErr := &cri.Error{Method: "StartContainer", Code: codes.Unknown, Message: `exec: "/no/such/binary": stat /no/such/binary: no such file or directory`}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"a CRI call's error", runtimeErr, runtimeErr.Message},
		{"wrapped", fmt.Errorf("start container app: %w", runtimeErr), runtimeErr.Message},
		{"a raw gRPC status", status.Error(codes.NotFound, "no such container"), "no such container"},
		{"anything else", errors.New("disk full"), "disk full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, cri.RuntimeMessage(tc.err))
		})
	}
	assert.Equal(t, "cri StartContainer: Unknown: "+runtimeErr.Message, runtimeErr.Error(), "Error() keeps method and code")
}
