package fake

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseScript(t *testing.T) {
	cases := []struct {
		script string
		want   []step // nil with err: errSyntax
		err    bool
	}{
		{script: "", want: nil},
		{script: "echo a  b", want: []step{{"", []string{"echo", "a", "b"}}}},
		{script: `echo 'a  b' "c \"d\" \$" e\ f`, want: []step{{"", []string{"echo", "a  b", `c "d" $`, "e f"}}}},
		{script: "a; b && c || d\ne", want: []step{{"", []string{"a"}}, {";", []string{"b"}}, {"&&", []string{"c"}}, {"||", []string{"d"}}, {";", []string{"e"}}}},
		{script: "a &&\n  b # comment", want: []step{{"", []string{"a"}}, {"&&", []string{"b"}}}},
		{script: "[ -d /tmp ]", want: []step{{"", []string{"[", "-d", "/tmp", "]"}}}},
		{script: "a#b", want: []step{{"", []string{"a#b"}}}},
		{script: "echo $HOME", err: true},
		{script: `echo "$HOME"`, err: true},
		{script: "echo `id`", err: true},
		{script: "a | b", err: true},
		{script: "a & b", err: true},
		{script: "a > f", err: true},
		{script: "echo *", err: true},
		{script: "cd ~", err: true},
		{script: "if true; then a; fi", err: true},
		{script: "X=1 a", err: true},
		{script: "&& a", err: true},
		{script: "a &&", err: true},
		{script: "echo 'open", err: true},
		{script: `echo "open`, err: true},
	}
	for _, tc := range cases {
		t.Run(tc.script, func(t *testing.T) {
			got, err := parseScript(tc.script)
			if tc.err {
				require.ErrorIs(t, err, errSyntax)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// The terminal between a client in raw mode and a process reading a line
// at a time.
func TestTerminal(t *testing.T) {
	cases := []struct {
		name  string
		typed string
		reads []string // "EOF" and "INTR" for those events
		echo  string
	}{
		{"a line", "ab\r", []string{"ab\n"}, "ab\r\n"},
		{"erase", "ax\x7fb\n", []string{"ab\n"}, "ax\b \bb\r\n"},
		{"erase on an empty line", "\x7fa\r", []string{"a\n"}, "a\r\n"},
		{"kill", "ab\x15cd\r", []string{"cd\n"}, "ab\b \b\b \bcd\r\n"},
		{"eof, then more", "\x04x\r", []string{"EOF", "x\n"}, "x\r\n"},
		{"eof mid-line sends the line", "ab\x04", []string{"ab"}, "ab"},
		{"interrupt", "abc\x03d\r", []string{"INTR", "d\n"}, "abc^C\r\nd\r\n"},
		{"the client's stdin ends mid-line", "tail", []string{"tail"}, "tail"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var echo bytes.Buffer
			term := newTerminal(strings.NewReader(tc.typed), &echo)
			var got []string
			buf := make([]byte, 64)
			for range len(tc.reads) {
				n, err := term.Read(buf)
				switch {
				case errors.Is(err, io.EOF):
					got = append(got, "EOF")
				case errors.Is(err, errInterrupt):
					got = append(got, "INTR")
				default:
					require.NoError(t, err)
					got = append(got, string(buf[:n]))
				}
			}
			assert.Equal(t, tc.reads, got)
			_, err := term.Read(buf)
			assert.ErrorIs(t, err, io.EOF, "then the client's stdin ends")
			assert.Equal(t, tc.echo, echo.String())
		})
	}
}
