package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParse(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.txt")
	require.NoError(t, os.WriteFile(file, []byte(`# first
cmd one
in 1
in 2
----
out 1

# second, no output
cmd two
----

cmd three
----
out 3
# trailer
`), 0o600))
	cases, trailer := parse(t, file)
	require.Len(t, cases, 3)
	assert.Equal(t, Case{File: file, Line: 2, Command: "cmd one", Input: []string{"in 1", "in 2"}, pre: []string{"# first"}, want: []string{"out 1"}}, cases[0])
	assert.Equal(t, Case{File: file, Line: 9, Command: "cmd two", pre: []string{"", "# second, no output"}}, cases[1])
	assert.Equal(t, []string{"out 3", "# trailer"}, cases[2].want, "output runs to a blank line")
	assert.Empty(t, trailer)
	assert.Equal(t, []string{"cmd", "one"}, cases[0].Fields())
}

func TestLines(t *testing.T) {
	assert.Nil(t, Lines(""))
	assert.Equal(t, []string{"a", "b"}, Lines("a\nb"))
}

// TestReplay runs a transcript through a harness that echoes its input, and
// through one whose output differs.
func TestReplay(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.txt")
	require.NoError(t, os.WriteFile(file, []byte("echo\na\nb\n----\na\nb\n"), 0o600))
	replay(t, file, func(c Case) []string { return c.Input })

	r := &recorder{}
	replay(r, file, func(Case) []string { return []string{"other"} })
	require.Len(t, r.errors, 1, "a differing output fails the test")
	assert.Contains(t, r.errors[0], "t.txt:1: echo\n--- got:\nother\n--- want:\na\nb")
}

// TestRunDir replays the transcripts of a directory other than testdata,
// each as a subtest with a fresh harness.
func TestRunDir(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("echo\nx\n----\nx\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.txt"), []byte("echo\n----\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.md"), []byte("not a transcript"), 0o600))
	var harnesses int
	RunDir(t, dir, func(*testing.T) func(Case) []string {
		harnesses++
		return func(c Case) []string { return c.Input }
	})
	assert.Equal(t, 2, harnesses, "one harness per transcript")
}

// recorder is a reporter that keeps the errors.
type recorder struct{ errors []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatal(args ...any)                 { panic(fmt.Sprint(args...)) }
func (r *recorder) Fatalf(format string, args ...any) { panic(fmt.Sprintf(format, args...)) }
