package podspec

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// HugePageSize returns the page size, in bytes, of a hugepages-<size>
// resource name (hugepages-2Mi: 2097152); false for any other name or a
// size that is not a positive quantity.
func HugePageSize(name v1.ResourceName) (int64, bool) {
	s, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
	if !ok {
		return 0, false
	}
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		return 0, false
	}
	return q.Value(), true
}

// HugePageUnitSize spells a page size in bytes as the CRI's HugepageLimit
// and the hugetlb controller's files do (upstream's
// HugePageUnitSizeFromByteSize): "2MB", "1GB", "64KB"; a size in the
// largest unit it divides.
func HugePageUnitSize(bytes int64) string {
	units := []string{"B", "KB", "MB", "GB", "TB", "PB"}
	i := 0
	for bytes >= 1024 && bytes%1024 == 0 && i < len(units)-1 {
		bytes /= 1024
		i++
	}
	return fmt.Sprintf("%d%s", bytes, units[i])
}
