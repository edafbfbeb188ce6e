// Package atomicfile writes checkpoint files so that a crash leaves either
// the old content or the new one: the data goes to a temporary file in the
// same directory, is synced, and is renamed over the file.
package atomicfile
