package checksum

import (
	"encoding/json"
	"hash/fnv"
)

// JSON returns the FNV-32a of v's JSON encoding.
func JSON(v any) (uint32, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, err
	}
	h := fnv.New32a()
	h.Write(b)
	return h.Sum32(), nil
}
