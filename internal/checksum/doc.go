// Package checksum is the checksum of the resource managers' checkpoints
// (cpu_manager_state, memory_manager_state): FNV-32a over the JSON of the
// checkpoint with its checksum field zeroed by the caller.
package checksum
