package vkprovider

import (
	"errors"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
)

// ErrInvalidOptions is wrapped by New's errors for options it cannot use.
var ErrInvalidOptions = errors.New("invalid options")

// ErrPodNotFound is wrapped by the errors of the methods VK calls for a pod
// the provider does not hold. Those errors are also errdefs.ErrNotFound, so
// that errdefs.IsNotFound, which VK's pod controller asks, finds them.
var ErrPodNotFound = errors.New("pod not found")

// ErrNotRunning is wrapped by Ping's error once Run has returned, and by
// Run's when it was called before.
var ErrNotRunning = errors.New("provider not running")

// notFound is an error that both errors.Is(err, ErrPodNotFound) and VK's
// errdefs.IsNotFound recognize (errdefs walks Cause, not Unwrap).
type notFound struct{ msg string }

var _ errdefs.ErrNotFound = notFound{}

// Error, NotFound (errdefs.ErrNotFound's) and Is (ErrPodNotFound) make
// the error both kinds.
func (e notFound) Error() string        { return e.msg }
func (e notFound) NotFound() bool       { return true }
func (e notFound) Is(target error) bool { return target == ErrPodNotFound }

// podNotFound is the error for the pod namespace/name.
func podNotFound(namespace, name string) error {
	return notFound{msg: "pod " + namespace + "/" + name + " not found"}
}
