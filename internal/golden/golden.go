package golden

import (
	"bufio"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/ with the current output")

// Case is one command of a transcript.
type Case struct {
	// File and Line locate the command, for error messages.
	File string
	Line int
	// Command is the command line.
	Command string
	// Input are the lines between the command and "----".
	Input []string

	pre  []string
	want []string
}

// Fields returns the command's words.
func (c Case) Fields() []string { return strings.Fields(c.Command) }

// Run replays every testdata/*.txt transcript as a subtest. For each file it
// calls newHarness for a fresh harness and then the harness for each case in
// order; the lines returned are compared with the expected output.
func Run(t *testing.T, newHarness func(t *testing.T) func(c Case) []string) {
	t.Helper()
	RunDir(t, "testdata", newHarness)
}

// RunDir is Run over the *.txt transcripts of dir instead of testdata, for a
// package whose transcripts drive more than one harness (testdata/<name>/).
// Run does not descend into such a directory.
func RunDir(t *testing.T, dir string, newHarness func(t *testing.T) func(c Case) []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no transcripts in %s/", filepath.ToSlash(dir))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			replay(t, file, newHarness(t))
		})
	}
}

// reporter is the part of *testing.T that replay and parse use.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func replay(t reporter, file string, run func(Case) []string) {
	t.Helper()
	cases, trailer := parse(t, file)
	var rewritten strings.Builder
	for _, c := range cases {
		got := run(c)
		if *update {
			for _, l := range c.pre {
				rewritten.WriteString(l + "\n")
			}
			rewritten.WriteString(c.Command + "\n")
			for _, l := range c.Input {
				rewritten.WriteString(l + "\n")
			}
			rewritten.WriteString("----\n")
			for _, l := range got {
				rewritten.WriteString(l + "\n")
			}
			continue
		}
		if g, w := strings.Join(got, "\n"), strings.Join(c.want, "\n"); g != w {
			t.Errorf("%s:%d: %s\n--- got:\n%s\n--- want:\n%s", c.File, c.Line, c.Command, g, w)
		}
	}
	if *update {
		for _, l := range trailer {
			rewritten.WriteString(l + "\n")
		}
		if err := os.WriteFile(file, []byte(rewritten.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// parse reads a transcript: its cases, and the comment and blank lines
// after the last one.
func parse(t reporter, file string) ([]Case, []string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const (
		before = iota // comments and blank lines before a command
		input         // after the command, before "----"
		output        // after "----"
	)
	var (
		cases []Case
		pre   []string
		cur   Case
		stage = before
		n     int
	)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		n++
		l := sc.Text()
		switch stage {
		case before:
			if l == "" || strings.HasPrefix(l, "#") {
				pre = append(pre, l)
				continue
			}
			cur, pre, stage = Case{File: file, Line: n, Command: l, pre: pre}, nil, input
		case input:
			if l == "----" {
				stage = output
				continue
			}
			cur.Input = append(cur.Input, l)
		case output:
			if l == "" {
				cases = append(cases, cur)
				pre, stage = []string{l}, before
				continue
			}
			cur.want = append(cur.want, l)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	switch stage {
	case input:
		t.Fatalf("%s:%d: %q has no ---- line", file, cur.Line, cur.Command)
	case output:
		cases = append(cases, cur)
	}
	return cases, pre
}

// Lines splits a harness's output into lines; "" is no line at all.
func Lines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
