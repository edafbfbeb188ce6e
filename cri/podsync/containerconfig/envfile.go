package containerconfig

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	v1 "k8s.io/api/core/v1"
)

// envFileUnparsable is the status message of a container whose fileKeyRef
// names a file that cannot be opened or parsed: upstream's, which says no
// more (the cause goes to the log).
const envFileUnparsable = "couldn't parse env file"

// envFileValue resolves an env var's fileKeyRef (EnvFiles, on by default):
// the value of ref.Key in the env file at ref.Path inside the pod's volume
// ref.VolumeName (an emptyDir, which API validation requires, written by an
// init container), read when the container is created. volumes gives the
// host directory of each volume of the pod. As upstream's kubelet: a volume
// that is not set up fails ("cannot find the volume …"); a file that cannot
// be opened or parsed fails with envFileUnparsable, optional or not; a key
// that is absent, or whose value is empty, leaves the variable out when the
// reference is optional (skip) and fails otherwise.
//
// ref.Path comes from the pod: it is opened through an os.Root of the
// volume's directory, so neither "..", an absolute path (read, as upstream
// does, relative to the volume) nor a symbolic link can reach outside the
// volume, and only a regular file is read (a FIFO would block the kubelet).
func envFileValue(ref *v1.FileKeySelector, volumes map[string]string) (v string, skip bool, err error) {
	optional := ref.Optional != nil && *ref.Optional
	dir, ok := volumes[ref.VolumeName]
	if !ok || dir == "" {
		err := fmt.Errorf("cannot find the volume %q referenced by FileKeyRef", ref.VolumeName)
		return "", false, &statusError{msg: err.Error(), err: err}
	}
	rel, err := volumeRelative(ref.Path)
	if err != nil {
		return "", false, &statusError{msg: envFileUnparsable, err: err}
	}
	file := filepath.Join(dir, rel)
	v, err = readEnvFileKey(dir, rel, ref.Key)
	if err != nil {
		return "", false, &statusError{msg: envFileUnparsable, err: fmt.Errorf("env file %s: %w", file, err)}
	}
	if v == "" {
		if optional {
			return "", true, nil
		}
		err := fmt.Errorf("environment variable key %q not found in file %q", ref.Key, file)
		return "", false, &statusError{msg: err.Error(), err: err}
	}
	return v, false, nil
}

// volumeRelative makes a fileKeyRef path relative to its volume: leading
// slashes dropped, as upstream reads an absolute path inside the volume;
// ".." refused, as API validation does.
func volumeRelative(p string) (string, error) {
	rel := strings.TrimLeft(filepath.ToSlash(p), "/")
	for _, part := range strings.Split(rel, "/") {
		if part == ".." {
			return "", fmt.Errorf("fileKeyRef path %q must not contain '..'", p)
		}
	}
	if rel == "" {
		return "", fmt.Errorf("fileKeyRef path %q names no file", p)
	}
	return filepath.FromSlash(rel), nil
}

// readEnvFileKey opens rel inside dir without leaving it and looks key up.
func readEnvFileKey(dir, rel, key string) (string, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", err
	}
	defer func() { _ = root.Close() }()
	// O_NONBLOCK: opening a FIFO must not wait for a writer; it has no
	// effect on a regular file.
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	return lookupEnvFile(f, key)
}

// errEnvFileSyntax is wrapped by lookupEnvFile's error for a line that is
// not upstream's env-file syntax.
var errEnvFileSyntax = errors.New("invalid environment variable format")

// lookupEnvFile returns the value of the first assignment to key in an env
// file, with the syntax upstream's kubelet accepts (a strict subset of the
// POSIX shell's):
//
//   - NAME='value', the value in single quotes and taken literally (no
//     escapes, no expansion); it may span lines, which are joined by "\n";
//     after the closing quote only blanks and a "# comment" may follow;
//   - blank lines, blanks before NAME and lines whose first non-blank is
//     '#' are skipped, outside quotes;
//   - a blank before '=' is an error; a blank right after '=' assigns the
//     empty string (NAME= 'x' sets NAME to "", as a shell does);
//   - lines end at "\n", with a "\r" before it dropped; a line longer than
//     64KiB (bufio.MaxScanTokenSize) is an error, and so is a quote left
//     open at the end.
//
// The file is read up to the first assignment to key, so a malformed line
// after it goes unnoticed, as upstream's does. "" means the key is absent or
// its value empty: upstream's kubelet does not tell them apart.
func lookupEnvFile(r io.Reader, key string) (string, error) {
	sc := bufio.NewScanner(r)
	line := 0
	bad := func(at int, why string) error {
		return fmt.Errorf("%w at line %d: %s", errEnvFileSyntax, at, why)
	}
	for sc.Scan() {
		line++
		text := strings.TrimLeft(sc.Text(), " \t")
		if text == "" || text[0] == '#' {
			continue
		}
		name, value, ok := strings.Cut(text, "=")
		switch {
		case !ok:
			return "", bad(line, "missing '='")
		case strings.TrimRight(name, " \t") == "":
			return "", bad(line, "empty variable name")
		case strings.TrimRight(name, " \t") != name:
			return "", bad(line, "whitespace before '=' is not allowed")
		}
		if value != "" && (value[0] == ' ' || value[0] == '\t') {
			// NAME= 'x': an empty assignment followed by a word.
			if name == key {
				return "", nil
			}
			continue
		}
		if value == "" || value[0] != '\'' {
			return "", bad(line, "value must be enclosed in single quotes")
		}
		first := line
		var b strings.Builder
		rest := value[1:]
		for {
			quoted, after, closed := strings.Cut(rest, "'")
			if closed {
				b.WriteString(quoted)
				if after = strings.TrimLeft(after, " \t"); after != "" && after[0] != '#' {
					return "", bad(line, "unexpected content after closing quote")
				}
				break
			}
			b.WriteString(rest)
			b.WriteByte('\n')
			if !sc.Scan() {
				if err := sc.Err(); err != nil {
					return "", fmt.Errorf("read: %w", err)
				}
				return "", fmt.Errorf("%w starting at line %d: unclosed single quote", errEnvFileSyntax, first)
			}
			line++
			rest = sc.Text()
		}
		if name == key {
			return b.String(), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", fmt.Errorf("read: %w", err)
	}
	return "", nil
}
