package main

import (
	"fmt"
	"log/slog"
	"unicode/utf8"
)

// maxLogValue is the longest string value minikubelet logs whole; longer
// ones (a 64 KiB image name that fails to pull on every retry) are cut.
const maxLogValue = 1024

// cutLongValues is the log handler's ReplaceAttr: a string value longer
// than maxLogValue keeps its first maxLogValue bytes (cut on a rune
// boundary) and says how many it dropped, and so does an error's message.
func cutLongValues(_ []string, a slog.Attr) slog.Attr {
	var s string
	switch v := a.Value; v.Kind() {
	case slog.KindString:
		s = v.String()
	case slog.KindAny:
		err, ok := v.Any().(error)
		if !ok || err == nil {
			return a
		}
		s = err.Error()
	default:
		return a
	}
	if len(s) <= maxLogValue {
		return a
	}
	cut := maxLogValue
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return slog.String(a.Key, fmt.Sprintf("%s...(%d more bytes)", s[:cut], len(s)-cut))
}
