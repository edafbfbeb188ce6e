//go:build !unix

package localstate

// oNoFollow is 0 where open has no such flag: the Lstat before and after
// the open are the only checks there.
const oNoFollow = 0
