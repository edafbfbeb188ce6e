package status

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFileMessageReader(t *testing.T) {
	root := t.TempDir()
	pods := filepath.Join(root, "pods")
	logs := filepath.Join(root, "logs")
	secret := filepath.Join(root, "secret")
	for _, d := range []string{filepath.Join(pods, "uid-1", "containers", "a"), filepath.Join(logs, "ns_web_uid-1", "a")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	write := func(p, s string) { require.NoError(t, os.WriteFile(p, []byte(s), 0o644)) }
	msgFile := filepath.Join(pods, "uid-1", "containers", "a", "abc")
	write(msgFile, strings.Repeat("x", 5000)+"the end")
	write(secret, "do not read")
	require.NoError(t, os.Symlink(secret, filepath.Join(pods, "uid-1", "link")))
	logFile := filepath.Join(logs, "ns_web_uid-1", "a", "0.log")
	var b strings.Builder
	for i := range 100 {
		b.WriteString("2026-01-02T03:04:05.000000000Z stdout F line " + strings.Repeat("y", i%3) + "\n")
	}
	write(logFile, b.String())

	r := FileMessageReader{PodsDir: pods, LogsDir: logs}
	t.Run("tail of the file", func(t *testing.T) {
		got, err := r.ReadTerminationMessage(msgFile, MaxTerminationMessageBytes)
		require.NoError(t, err)
		assert.Len(t, got, MaxTerminationMessageBytes)
		assert.True(t, strings.HasSuffix(string(got), "the end"))
	})
	t.Run("missing file", func(t *testing.T) {
		_, err := r.ReadTerminationMessage(filepath.Join(pods, "uid-1", "nope"), 10)
		assert.ErrorIs(t, err, fs.ErrNotExist)
	})
	for name, p := range map[string]string{
		"dot-dot":  filepath.Join(pods, "uid-1", "..", "..", "secret"),
		"outside":  secret,
		"relative": "uid-1/containers/a/abc",
		"the root": pods,
	} {
		t.Run("refused: "+name, func(t *testing.T) {
			_, err := r.ReadTerminationMessage(p, 100)
			assert.ErrorIs(t, err, ErrOutsideRoot)
		})
	}
	t.Run("refused: symlink out of the root", func(t *testing.T) {
		_, err := r.ReadTerminationMessage(filepath.Join(pods, "uid-1", "link"), 100)
		require.Error(t, err)
		assert.NotContains(t, err.Error(), "do not read")
	})
	t.Run("log tail: last 80 lines within 2048 bytes", func(t *testing.T) {
		got, err := r.ReadLogTail(logFile, MaxTerminationLogLines, MaxTerminationLogBytes)
		require.NoError(t, err)
		assert.Equal(t, MaxTerminationLogLines, strings.Count(string(got), "\n"))
		assert.True(t, strings.HasPrefix(string(got), "line "))
		assert.NotContains(t, string(got), "stdout")
		small, err := r.ReadLogTail(logFile, MaxTerminationLogLines, 20)
		require.NoError(t, err)
		assert.Len(t, small, 20)
	})
	t.Run("log outside its root", func(t *testing.T) {
		_, err := r.ReadLogTail(msgFile, 10, 10)
		assert.True(t, errors.Is(err, ErrOutsideRoot))
	})
}

func TestDecodeLogTail(t *testing.T) {
	raw := "2026-01-02T03:04:05Z stdout P hel\n" +
		"2026-01-02T03:04:05Z stdout F lo\n" +
		"not cri format\n" +
		"2026-01-02T03:04:05Z stderr F \n" +
		"2026-01-02T03:04:05Z stderr P unfinished"
	assert.Equal(t, "hello\nnot cri format\n\nunfinished", string(DecodeLogTail([]byte(raw), 80, 2048)))
	assert.Equal(t, "\nunfinished", string(DecodeLogTail([]byte(raw), 2, 2048)))
}
