//go:build !envtest

package envnode_test

import "go.uber.org/goleak"

// leakIgnores: the unit tests leave no goroutine behind.
var leakIgnores []goleak.Option
