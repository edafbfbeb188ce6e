package cgroups

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// hugePageSize reads the page size of a hugepages-<size> resource name.
func hugePageSize(name v1.ResourceName) (int64, bool) {
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

// hugetlbSize spells a page size as the hugetlb controller's files do:
// "2MB", "1GB", "64KB".
func hugetlbSize(bytes int64) string {
	units := []string{"B", "KB", "MB", "GB", "TB"}
	i := 0
	for bytes >= 1024 && bytes%1024 == 0 && i < len(units)-1 {
		bytes /= 1024
		i++
	}
	return fmt.Sprintf("%d%s", bytes, units[i])
}
