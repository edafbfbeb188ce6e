package cri

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Sentinel errors for the outcomes a caller branches on. Errors returned by the
// CRI client (and by fake.Runtime) satisfy errors.Is with the sentinel that
// matches their gRPC status code; an implementation served by NewServer may
// return any error that wraps a sentinel and the server sends the matching code.
var (
	// ErrNotFound: the sandbox, container or image does not exist (NotFound).
	ErrNotFound = errors.New("not found")
	// ErrAlreadyExists: an object with that name or ID exists (AlreadyExists).
	ErrAlreadyExists = errors.New("already exists")
	// ErrInvalidArgument: the request was malformed (InvalidArgument).
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrFailedPrecondition: the object is in the wrong state for the call,
	// e.g. exec in a stopped container (FailedPrecondition).
	ErrFailedPrecondition = errors.New("failed precondition")
	// ErrUnimplemented: the runtime does not implement the call (Unimplemented).
	ErrUnimplemented = errors.New("not implemented by the runtime")
	// ErrTimeout: the call did not finish within its deadline (DeadlineExceeded).
	ErrTimeout = errors.New("timed out")
	// ErrUnavailable: the runtime cannot be reached (Unavailable).
	ErrUnavailable = errors.New("runtime unavailable")
)

// sentinelCodes pairs each sentinel with its gRPC code, in both directions.
var sentinelCodes = []struct {
	err  error
	code codes.Code
}{
	{ErrNotFound, codes.NotFound},
	{ErrAlreadyExists, codes.AlreadyExists},
	{ErrInvalidArgument, codes.InvalidArgument},
	{ErrFailedPrecondition, codes.FailedPrecondition},
	{ErrUnimplemented, codes.Unimplemented},
	{ErrTimeout, codes.DeadlineExceeded},
	{ErrUnavailable, codes.Unavailable},
}

// Error is an error returned by a runtime over CRI. It keeps the method, the
// gRPC code and the runtime's message, satisfies errors.Is with the matching
// sentinel (ErrNotFound for codes.NotFound, ...) and converts back to its gRPC
// status with status.FromError.
type Error struct {
	// Method is the CRI method that failed, e.g. "RunPodSandbox".
	Method string
	// Code is the gRPC status code the runtime returned.
	Code codes.Code
	// Message is the runtime's own message.
	Message string
}

// Error implements error.
func (e *Error) Error() string {
	return fmt.Sprintf("cri %s: %s: %s", e.Method, e.Code, e.Message)
}

// Is reports whether target is the sentinel for e.Code.
func (e *Error) Is(target error) bool {
	return target != nil && sentinelFor(e.Code) == target
}

// GRPCStatus returns the error as a gRPC status, so that a server relaying it
// sends the runtime's code.
func (e *Error) GRPCStatus() *status.Status {
	return status.New(e.Code, e.Message)
}

func sentinelFor(c codes.Code) error {
	for _, sc := range sentinelCodes {
		if sc.code == c {
			return sc.err
		}
	}
	return nil
}

// fromRPC converts an error returned by a gRPC call into an *Error. ctx is the
// caller's context: a call that ended because ctx ended returns ctx's error
// wrapped, so that errors.Is(err, context.Canceled) holds.
func fromRPC(ctx context.Context, method string, err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return fmt.Errorf("cri %s: %w", method, err)
	}
	if st.Code() == codes.Canceled && ctx.Err() != nil {
		return fmt.Errorf("cri %s: %w", method, ctx.Err())
	}
	return &Error{Method: method, Code: st.Code(), Message: st.Message()}
}

// ToStatus converts an error returned by a RuntimeService or ImageService
// implementation into the gRPC status a CRI server sends: a status error keeps
// its code, a sentinel (wrapped or not) gets its code, a context error becomes
// Canceled or DeadlineExceeded, and anything else is Unknown. It is what
// NewServer uses; it is exported for servers of one's own.
func ToStatus(err error) *status.Status {
	if err == nil {
		return nil
	}
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		if st := se.GRPCStatus(); st != nil {
			return status.New(st.Code(), err.Error())
		}
	}
	for _, sc := range sentinelCodes {
		if errors.Is(err, sc.err) {
			return status.New(sc.code, err.Error())
		}
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return status.New(codes.DeadlineExceeded, err.Error())
	case errors.Is(err, context.Canceled):
		return status.New(codes.Canceled, err.Error())
	}
	return status.New(codes.Unknown, err.Error())
}

// RuntimeMessage returns the runtime's own message for err: for an error a
// CRI call returned, the message of its gRPC status, without the method and
// code this package puts before it (what upstream kubelet shows in a
// container's waiting message and events); for any other error, its
// Error().
func RuntimeMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	if st, ok := status.FromError(err); ok {
		return st.Message()
	}
	return err.Error()
}
