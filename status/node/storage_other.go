//go:build !linux

package node

import "errors"

// storageCapacity is not measured off Linux.
func storageCapacity(string) (int64, error) {
	return 0, errors.New("filesystem capacity: not measured on this system")
}
