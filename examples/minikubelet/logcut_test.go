package main

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A 64 KiB image name in a log line is cut to maxLogValue bytes, with the
// count of what was dropped; short values and other kinds pass whole.
func TestCutLongValues(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: cutLongValues}))
	long := strings.Repeat("a", 64<<10)
	log.Warn("pull failed", "image", long, "err", errors.New("pull "+long), "short", "busybox", "n", 3)
	out := buf.String()
	assert.Less(t, len(out), 3*maxLogValue, "the line is cut: %d bytes", len(out))
	assert.Contains(t, out, "...(64512 more bytes)")
	assert.Contains(t, out, "...(64517 more bytes)", "the error's message is cut too")
	assert.Contains(t, out, "short=busybox")
	assert.Contains(t, out, "n=3")

	// A cut never splits a rune.
	got := cutLongValues(nil, slog.String("k", strings.Repeat("é", maxLogValue)))
	assert.True(t, strings.HasPrefix(got.Value.String(), strings.Repeat("é", maxLogValue/2)+"..."), got.Value.String()[:20])
}
