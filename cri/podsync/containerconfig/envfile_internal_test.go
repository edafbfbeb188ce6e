package containerconfig

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLookupEnvFile pins the env-file syntax of upstream's kubelet
// (pkg/kubelet/util/env ParseEnv), case by case.
func TestLookupEnvFile(t *testing.T) {
	for _, tc := range []struct {
		name, file, key, want string
		err                   string // a substring; "" means no error
	}{
		{name: "a quoted value", file: "A='1'\nB='2'\n", key: "B", want: "2"},
		{name: "blanks before the name", file: "  \tA='1'\n \tB='2'\n", key: "B", want: "2"},
		{name: "blank and comment lines", file: "# top\n\n   \n  # indented\nA='1'\n\nB='2'\n", key: "B", want: "2"},
		{name: "absent key: empty", file: "A='1'\nB='2'\n", key: "C", want: ""},
		{name: "empty file", file: "", key: "A", want: ""},
		{name: "empty value: as absent", file: "A='1'\nB=''\nC='3'\n", key: "B", want: ""},
		{name: "the first assignment wins", file: "A='1'\nA='2'\n", key: "A", want: "1"},
		{name: "# inside the quotes", file: "A='x#y'\n", key: "A", want: "x#y"},
		{name: "= inside the quotes", file: "A='a=b=c'\n", key: "A", want: "a=b=c"},
		{name: "blanks inside the quotes kept", file: "A='  a b  '\n", key: "A", want: "  a b  "},
		{name: "a comment after the value", file: "A='1'   # note\n", key: "A", want: "1"},
		{name: "blanks after the value", file: "A='1' \t\n", key: "A", want: "1"},
		{name: "no expansion, no escapes", file: `A='$HOME ${X} $(Y) \n \t "q"'` + "\n", key: "A", want: `$HOME ${X} $(Y) \n \t "q"`},
		{name: "unicode", file: "A='héllo 世界'\n", key: "A", want: "héllo 世界"},
		{name: "a multi-line value", file: "A='line one\n  line two\n\nend'\nB='2'\n", key: "A", want: "line one\n  line two\n\nend"},
		{name: "CRLF line ends", file: "A='1'\r\nB='x\r\ny'\r\n", key: "B", want: "x\ny"},
		{name: "no newline at the end", file: "A='1'", key: "A", want: "1"},
		{name: "a blank after =: empty", file: "A= '1'\n", key: "A", want: ""},
		{name: "a blank after = of another key: skipped", file: "B= 'x'\nA='1'\n", key: "A", want: "1"},
		{name: "a later bad line is not read", file: "A='1'\nnonsense\n", key: "A", want: "1"},
		{name: "a blank before =", file: "A ='1'\n", key: "A", err: "at line 1: whitespace before '=' is not allowed"},
		{name: "a blank before = of another key", file: "A='1'\nB = '2'\n", key: "B", err: "at line 2: whitespace before '=' is not allowed"},
		{name: "no name", file: "='1'\nB='2'\n", key: "B", err: "at line 1: empty variable name"},
		{name: "no =", file: "A='1'\nB\n", key: "B", err: "at line 2: missing '='"},
		{name: "unquoted", file: "A=1\n", key: "A", err: "at line 1: value must be enclosed in single quotes"},
		{name: "nothing after =", file: "A=\n", key: "A", err: "value must be enclosed in single quotes"},
		{name: "double quotes", file: `A="1"` + "\n", key: "A", err: "value must be enclosed in single quotes"},
		{name: "two quoted strings", file: "A='1''2'\n", key: "A", err: "unexpected content after closing quote"},
		{name: "a word after the quote", file: "A='1'x\n", key: "A", err: "at line 1: unexpected content after closing quote"},
		{name: "a quote left open swallows the next line", file: "A='1'\nB='2\nC='3'\n", key: "B", err: "at line 3: unexpected content after closing quote"},
		{name: "a quote open at the end", file: "A='1\n2\n", key: "A", err: "starting at line 1: unclosed single quote"},
		{name: "a line over 64KiB", file: "A='" + strings.Repeat("x", 70000) + "'\n", key: "A", err: "token too long"},
		{name: "a line under 64KiB", file: "A='" + strings.Repeat("x", 60000) + "'\n", key: "A", want: strings.Repeat("x", 60000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lookupEnvFile(strings.NewReader(tc.file), tc.key)
			if tc.err != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// FuzzLookupEnvFile: any file and key give a value or an error, never a
// panic; a value never holds a single quote; and an assignment to key put
// first is always what is found, whatever follows.
func FuzzLookupEnvFile(f *testing.F) {
	for _, s := range []struct{ file, key, value string }{
		{"A='1'\nB='2'\n", "B", "v"},
		{"# c\n\n  A='x#y' # z\n", "A", "multi\nline"},
		{"A='1\n2\n'\n", "A", ""},
		{"A= '1'\nB ='2'\n=''\nC\n", "C", "$(X)"},
		{"A='1'\r\nB='2'x\r\n", "B", " sp "},
		{"A='unclosed\n", "A", "é"},
	} {
		f.Add([]byte(s.file), s.key, s.value)
	}
	f.Fuzz(func(t *testing.T, file []byte, key, value string) {
		v, err := lookupEnvFile(strings.NewReader(string(file)), key)
		if err == nil && strings.Contains(v, "'") {
			t.Fatalf("value %q holds a quote", v)
		}
		if err != nil && !errors.Is(err, errEnvFileSyntax) && !strings.Contains(err.Error(), "read:") {
			t.Fatalf("an error neither of syntax nor of reading: %v", err)
		}
		// A name that parses as one (no blank, '=' or line end, not a
		// comment) and a value without a quote or a carriage return.
		if key == "" || strings.ContainsAny(key, "= \t\r\n") || key[0] == '#' || strings.ContainsAny(value, "'\r") {
			return
		}
		v, err = lookupEnvFile(strings.NewReader(key+"='"+value+"'\n"+string(file)), key)
		if err != nil {
			if len(key)+len(value) < 60000 {
				t.Fatalf("%s='%s' first: %v", key, value, err)
			}
			return
		}
		if v != value {
			t.Fatalf("%s='%s' first: got %q", key, value, v)
		}
	})
}
