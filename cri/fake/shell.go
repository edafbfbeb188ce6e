package fake

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// proc is one command run in a container, by ExecSync, a streaming exec, or
// the process of a container that reads its stdin (see attach.go): the
// container it runs in, its standard streams and what may cut it short.
// The built-in commands below are the fake's, not a shell's: see the
// package doc for the list.
type proc struct {
	r        *Runtime
	c        *container
	mounts   []*runtimeapi.Mount
	own      *files
	in       *bufio.Reader // stdin; at EOF when the command has none
	out, err io.Writer     // with a terminal, both are the terminal
	tty      bool
	budget   time.Duration   // what is left of ExecSync's timeout; 0: no timeout
	exited   <-chan struct{} // closed when the container stops; nil: not watched
	abort    error           // why the command was cut short, once it was
}

// Why a command was cut short.
var (
	// errExecTimeout: ExecSync's timeout passed on the runtime's clock.
	errExecTimeout = errors.New("exec timeout")
	// errKilled: the container stopped, which kills what runs in it.
	errKilled = errors.New("the container stopped")
	// errInterrupt: the user typed the interrupt character (Ctrl-C) on the
	// terminal; a command reading it ends as SIGINT ends it (130).
	errInterrupt = errors.New("interrupt")
)

// Exit codes of commands cut short, as a shell reports them.
const (
	exitInterrupted = 130 // 128 + SIGINT
	exitUsage       = 2
)

// newProc returns a command of container c (mu held) with no stdin.
func (r *Runtime) newProcLocked(c *container) *proc {
	if c.files == nil {
		c.files = newFiles(time.Unix(0, c.createdAt))
	}
	return &proc{
		r:      r,
		c:      c,
		mounts: c.config.GetMounts(),
		own:    c.files,
		in:     bufio.NewReader(strings.NewReader("")),
		out:    io.Discard,
		err:    io.Discard,
	}
}

// sleep waits d on the runtime's clock, or less when the proc is cut short:
// by the rest of ExecSync's timeout (the time its commands wait counts
// against it), by ctx, by Close, or by the container stopping. It records
// why in p.abort and returns false then.
func (p *proc) sleep(ctx context.Context, d time.Duration) bool {
	if p.abort != nil {
		return false
	}
	var timedOut bool
	if p.budget > 0 {
		if p.budget < d {
			d, timedOut = p.budget, true
		}
		p.budget -= d
	}
	if d > 0 {
		t := p.r.clock.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C():
		case <-ctx.Done():
			p.abort = ctx.Err()
			return false
		case <-p.r.done:
			p.abort = ErrClosed
			return false
		case <-p.exited:
			p.abort = errKilled
			return false
		}
	}
	if timedOut {
		p.abort = errExecTimeout
		return false
	}
	return true
}

// run runs argv and returns its exit code: the first ExecRule that matches
// it, or else a built-in command, or else the fake's default (exit 0, no
// output).
func (p *proc) run(ctx context.Context, argv []string) int32 {
	if len(argv) == 0 || p.abort != nil {
		return 0
	}
	p.r.mu.Lock()
	rule, scripted := p.r.execRuleLocked(p.c, argv)
	p.r.mu.Unlock()
	if scripted {
		io.WriteString(p.out, rule.Stdout)
		io.WriteString(p.err, rule.Stderr)
		if rule.Duration > 0 && !p.sleep(ctx, rule.Duration) {
			return exitKilled
		}
		return rule.ExitCode
	}
	args := argv[1:]
	switch base(argv[0]) {
	case "echo":
		nl := "\n"
		if len(args) > 0 && args[0] == "-n" {
			args, nl = args[1:], ""
		}
		io.WriteString(p.out, strings.Join(args, " ")+nl)
	case "false":
		return 1
	case "cat":
		return p.cat(args)
	case "test":
		return p.test(args)
	case "[":
		if len(args) == 0 || args[len(args)-1] != "]" {
			fmt.Fprintln(p.err, "[: missing ]")
			return exitUsage
		}
		return p.test(args[:len(args)-1])
	case "mkdir":
		return p.mkdir(args)
	case "tar":
		return p.tar(args)
	case "sh", "bash", "ash", "dash":
		return p.shell(ctx, args)
	}
	return 0
}

// shell is sh: "sh -c SCRIPT" runs the script; "sh" alone (or with -i, -s
// or -l) reads commands from stdin, one line at a time, until EOF or exit;
// anything else (a script file) is the fake's default.
func (p *proc) shell(ctx context.Context, args []string) int32 {
	if len(args) >= 2 && strings.HasPrefix(args[0], "-") && strings.Contains(args[0], "c") {
		steps, err := parseScript(args[1])
		if err != nil {
			// Shell syntax the fake does not interpret: its default.
			return 0
		}
		code, _ := p.runSteps(ctx, steps)
		return code
	}
	for _, a := range args {
		if a != "-i" && a != "-s" && a != "-l" {
			return 0
		}
	}
	return p.interactive(ctx)
}

// prompt is what busybox sh prints to a terminal when it reads a command as
// root in /.
const prompt = "/ # "

// interactive reads commands from stdin and runs them, printing a prompt
// first when stdin is a terminal, until EOF or exit. A line the fake cannot
// interpret is an error (exit status 2), and the interrupt character
// discards the line being typed.
func (p *proc) interactive(ctx context.Context) int32 {
	var status int32
	for p.abort == nil {
		if p.tty {
			io.WriteString(p.out, prompt)
		}
		line, err := p.in.ReadString('\n')
		if errors.Is(err, errInterrupt) {
			status = exitInterrupted
			continue
		}
		if strings.TrimSpace(line) != "" {
			steps, perr := parseScript(line)
			if perr != nil {
				fmt.Fprintf(p.err, "sh: %v\n", perr)
				status = exitUsage
			} else {
				code, exit := p.runSteps(ctx, steps)
				if status = code; exit {
					return status
				}
			}
		}
		if err != nil {
			return status
		}
	}
	return status
}

// runSteps runs a parsed script. exit reports that the script ran exit (or
// was cut short), which ends the shell.
func (p *proc) runSteps(ctx context.Context, steps []step) (code int32, exit bool) {
	var status int32
	for _, st := range steps {
		if p.abort != nil {
			return status, true
		}
		if (st.op == "&&" && status != 0) || (st.op == "||" && status == 0) {
			continue
		}
		if st.argv[0] == "exit" {
			if len(st.argv) == 1 {
				return status, true
			}
			n, err := strconv.Atoi(st.argv[1])
			if err != nil {
				fmt.Fprintf(p.err, "sh: exit: Illegal number: %s\n", st.argv[1])
				return exitUsage, true
			}
			return int32(n & 0xff), true
		}
		status = p.run(ctx, st.argv)
	}
	return status, p.abort != nil
}

// step is one simple command of a script and the operator that joins it to
// the one before: "" for the first, ";", "&&" or "||".
type step struct {
	op   string
	argv []string
}

// errSyntax says that a script uses shell syntax the fake does not
// interpret: anything beyond words, quotes, backslashes, comments and the
// operators ;, && and ||.
var errSyntax = errors.New("syntax not supported by the fake runtime")

// keywords are the reserved words of the shell grammar, which the fake does
// not interpret.
var keywords = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "fi": true, "for": true, "while": true,
	"until": true, "do": true, "done": true, "case": true, "esac": true, "in": true,
	"function": true, "select": true, "time": true, "!": true, "{": true, "}": true, "[[": true, "]]": true,
}

// parseScript splits a script into simple commands: words separated by
// blanks, with single quotes, double quotes (without expansions) and
// backslashes; comments; commands joined by newlines, ;, && and ||. Any
// other syntax (expansions, redirections, pipes, globs, compound commands,
// assignments) is errSyntax.
func parseScript(s string) ([]step, error) {
	var (
		steps  []step
		argv   []string
		word   strings.Builder
		inWord bool
		op     string
	)
	flush := func() {
		if inWord {
			argv = append(argv, word.String())
			word.Reset()
			inWord = false
		}
	}
	end := func(next string) error {
		flush()
		if len(argv) == 0 {
			// An empty command: nothing between newlines or semicolons, or
			// a line break after && or || (which keeps waiting for the
			// command it joins); never right before && or ||.
			if next == "&&" || next == "||" {
				return errSyntax
			}
			return nil
		}
		if keywords[argv[0]] || isAssignment(argv[0]) {
			return errSyntax
		}
		steps = append(steps, step{op: op, argv: argv})
		argv, op = nil, next
		return nil
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		var err error
		switch {
		case c == ' ' || c == '\t':
			flush()
		case c == '\n' || c == ';':
			err = end(";")
		case (c == '&' || c == '|') && i+1 < len(s) && s[i+1] == c:
			err = end(string([]byte{c, c}))
			i++
		case c == '#' && !inWord:
			for i+1 < len(s) && s[i+1] != '\n' {
				i++
			}
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, errSyntax
			}
			word.WriteString(s[i+1 : i+1+j])
			inWord, i = true, i+1+j
		case c == '"':
			inWord = true
			if i, err = doubleQuoted(s, i+1, &word); err != nil {
				return nil, err
			}
		case c == '\\':
			inWord = true
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					word.WriteByte(s[i])
				}
			}
		case (c == '[' || c == ']') && !inWord && (i+1 == len(s) || strings.IndexByte(" \t\n;", s[i+1]) >= 0):
			word.WriteByte(c)
			inWord = true
		case strings.IndexByte("&|<>()$`*?[]{}", c) >= 0, c == '~' && !inWord:
			return nil, errSyntax
		default:
			word.WriteByte(c)
			inWord = true
		}
		if err != nil {
			return nil, err
		}
	}
	if err := end(""); err != nil {
		return nil, err
	}
	if op == "&&" || op == "||" {
		return nil, errSyntax
	}
	return steps, nil
}

// doubleQuoted reads a double-quoted string starting at s[i] (after the
// opening quote) into w and returns the index of the closing quote. An
// expansion inside is errSyntax.
func doubleQuoted(s string, i int, w *strings.Builder) (int, error) {
	for ; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return i, nil
		case '$', '`':
			return 0, errSyntax
		case '\\':
			if i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
				i++
				if s[i] != '\n' {
					w.WriteByte(s[i])
				}
				continue
			}
			w.WriteByte(c)
		default:
			w.WriteByte(c)
		}
	}
	return 0, errSyntax
}

// isAssignment reports whether a command word is a variable assignment
// (NAME=value).
func isAssignment(w string) bool {
	name, _, ok := strings.Cut(w, "=")
	if !ok || name == "" {
		return false
	}
	for i, c := range name {
		if c != '_' && (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// cat prints files as the container sees them: through its mounts, or its
// own files (see the package doc); "-", or no file, copies stdin. A file the
// fake does not know prints nothing: the fake cannot know an image's files.
// Messages are busybox's.
func (p *proc) cat(args []string) int32 {
	var files []string
	for _, a := range args {
		if len(a) < 2 || a[0] != '-' {
			files = append(files, a)
		}
	}
	if len(files) == 0 {
		files = []string{"-"}
	}
	var code int32
	for _, f := range files {
		if f == "-" {
			if _, err := io.Copy(p.out, p.in); errors.Is(err, errInterrupt) {
				return exitInterrupted
			}
			continue
		}
		data, err := readFile(p.mounts, p.own, cleanPath(f))
		switch {
		case errors.Is(err, errUnknownFile):
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(p.err, "cat: can't open '%s': No such file or directory\n", f)
			code = 1
		case err != nil:
			fmt.Fprintf(p.err, "cat: read error: %s\n", errorText(err))
			code = 1
		default:
			p.out.Write(data)
		}
	}
	return code
}

// errUnknownFile: a path that is neither under a mount nor among the
// container's own files, whose content the fake cannot know.
var errUnknownFile = errors.New("unknown to the fake runtime")

// readFile reads the container path p (clean, absolute).
func readFile(mounts []*runtimeapi.Mount, own *files, p string) ([]byte, error) {
	pl := locate(mounts, p)
	if !pl.mount {
		n, ok := own.stat(p)
		switch {
		case !ok:
			return nil, errUnknownFile
		case n.mode.IsDir():
			return nil, errIsDir
		case n.mode&fs.ModeSymlink != 0:
			return nil, errUnknownFile
		}
		return n.data, nil
	}
	host, err := pl.resolve()
	if err != nil {
		return nil, err
	}
	st, err := os.Stat(host)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, errIsDir
	}
	return os.ReadFile(host)
}

// test evaluates the file tests -e, -f, -d and -s, and their negation with
// !, on what the container has: its mounts and its own files (a path that
// is neither does not exist). Other expressions are the fake's default
// (true).
func (p *proc) test(args []string) int32 {
	neg := len(args) > 0 && args[0] == "!"
	if neg {
		args = args[1:]
	}
	if len(args) != 2 {
		return 0
	}
	mode, size, _, err := statPath(p.mounts, p.own, cleanPath(args[1]))
	var ok bool
	switch args[0] {
	case "-e":
		ok = err == nil
	case "-f":
		ok = err == nil && mode.IsRegular()
	case "-d":
		ok = err == nil && mode.IsDir()
	case "-s":
		ok = err == nil && size > 0
	default:
		return 0
	}
	if ok != neg {
		return 0
	}
	return 1
}

// mkdir creates directories among the container's own files; -p creates
// missing parents and accepts existing directories. A directory under a
// mount is refused: the fake never writes host files.
func (p *proc) mkdir(args []string) int32 {
	parents := false
	var dirs []string
	for _, a := range args {
		switch {
		case a == "-p":
			parents = true
		case len(a) > 1 && a[0] == '-':
		default:
			dirs = append(dirs, a)
		}
	}
	now := p.r.clock.Now()
	var code int32
	for _, d := range dirs {
		cp := cleanPath(d)
		var err error = errMountWrite
		if !locate(p.mounts, cp).mount {
			err = p.own.mkdir(cp, 0o755, now, parents)
		}
		if err != nil {
			fmt.Fprintf(p.err, "mkdir: can't create directory '%s': %s\n", d, errorText(err))
			code = 1
		}
	}
	return code
}
