package status

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// Upstream's limits on termination messages.
const (
	// MaxTerminationMessageBytes is how much of a termination message file
	// is read: its last 4096 bytes.
	MaxTerminationMessageBytes = 4096
	// MaxTerminationLogLines and MaxTerminationLogBytes bound the log tail
	// used by FallbackToLogsOnError: the last 80 lines, at most 2048 bytes.
	MaxTerminationLogLines = 80
	MaxTerminationLogBytes = 2048
	// MaxPodTerminationMessageBytes is shared by all the containers of a
	// pod: each container's message is cut to this divided by the number
	// of containers when a status is stored.
	MaxPodTerminationMessageBytes = 12 * 1024
)

// reasonContainerCannotRun is the runtime's reason for a container that
// never started; it has no logs to fall back to.
const reasonContainerCannotRun = "ContainerCannotRun"

// MessageReader reads what a terminated container left behind: its
// termination message file (through the host path of the mount at its
// terminationMessagePath) and the tail of its log. FileMessageReader reads
// real files; tests pass a map-backed fake.
type MessageReader interface {
	// ReadTerminationMessage returns at most maxBytes from the end of the
	// file at hostPath. A missing file is an error wrapping fs.ErrNotExist.
	ReadTerminationMessage(hostPath string, maxBytes int) ([]byte, error)
	// ReadLogTail returns the content of the last maxLines lines of the
	// CRI-format log at logPath, at most its last maxBytes bytes.
	ReadLogTail(logPath string, maxLines, maxBytes int) ([]byte, error)
}

// terminatedMessage returns the runtime's message of an exited container,
// followed (after ": ") by the container's termination message: the content
// of its termination message file or, with FallbackToLogsOnError after a
// failure, the tail of its log.
func (g *generator) terminatedMessage(cs *runtimeapi.ContainerStatus) string {
	msg := cs.GetMessage()
	r := g.in.Messages
	if r == nil {
		return msg
	}
	ann := cs.GetAnnotations()
	policy := v1.TerminationMessagePolicy(ann[cri.ContainerTerminationMessagePolicyAnnotation])
	fallback := policy == v1.TerminationMessageFallbackToLogsOnError && cs.GetExitCode() != 0 && cs.GetReason() != reasonContainerCannotRun
	tmsg, useLogs := readTerminationFile(r, cs, ann[cri.ContainerTerminationMessagePathAnnotation], fallback)
	if useLogs && cs.GetLogPath() != "" {
		if b, err := r.ReadLogTail(cs.GetLogPath(), MaxTerminationLogLines, MaxTerminationLogBytes); err == nil {
			tmsg = string(b)
		} else {
			tmsg = fmt.Sprintf("Error on reading termination message from logs: %v", err)
		}
	}
	if tmsg == "" {
		return msg
	}
	if msg != "" {
		return msg + ": " + tmsg
	}
	return tmsg
}

// readTerminationFile reads the termination message file of a container and
// says whether the log should be read instead.
func readTerminationFile(r MessageReader, cs *runtimeapi.ContainerStatus, path string, fallback bool) (string, bool) {
	if path == "" {
		return "", fallback
	}
	for _, m := range cs.GetMounts() {
		if m.GetContainerPath() != path {
			continue
		}
		b, err := r.ReadTerminationMessage(m.GetHostPath(), MaxTerminationMessageBytes)
		if errors.Is(err, fs.ErrNotExist) {
			return "", fallback
		}
		if err != nil {
			return fmt.Sprintf("Error on reading termination log %s: %v", m.GetHostPath(), err), false
		}
		return string(b), fallback && len(b) == 0
	}
	return "", fallback
}

// ErrOutsideRoot is wrapped by FileMessageReader's errors for a path outside
// the directory it may read.
var ErrOutsideRoot = errors.New("path outside allowed directory")

// FileMessageReader reads termination message files under PodsDir and logs
// under LogsDir. A path is read only when it lies inside its directory: it
// is resolved with os.Root, so neither ".." nor a symbolic link can lead
// outside.
type FileMessageReader struct {
	// PodsDir holds the pods' directories (upstream: /var/lib/kubelet/pods),
	// where termination message files live. Empty means
	// /var/lib/kubelet/pods.
	PodsDir string
	// LogsDir holds the containers' logs (upstream: /var/log/pods). Empty
	// means /var/log/pods.
	LogsDir string
}

var _ MessageReader = FileMessageReader{}

// ReadTerminationMessage implements MessageReader.
func (f FileMessageReader) ReadTerminationMessage(hostPath string, maxBytes int) ([]byte, error) {
	dir := f.PodsDir
	if dir == "" {
		dir = "/var/lib/kubelet/pods"
	}
	file, err := openInside(dir, hostPath)
	if err != nil {
		return nil, fmt.Errorf("read termination message %s: %w", hostPath, err)
	}
	defer file.Close()
	b, err := readTail(file, maxBytes)
	if err != nil {
		return nil, fmt.Errorf("read termination message %s: %w", hostPath, err)
	}
	return b, nil
}

// ReadLogTail implements MessageReader. It decodes the CRI log format
// ("<time> <stream> <P|F> <content>"), joining partial lines; a line not in
// that format is taken as it is.
func (f FileMessageReader) ReadLogTail(logPath string, maxLines, maxBytes int) ([]byte, error) {
	dir := f.LogsDir
	if dir == "" {
		dir = "/var/log/pods"
	}
	file, err := openInside(dir, logPath)
	if err != nil {
		return nil, fmt.Errorf("read log %s: %w", logPath, err)
	}
	defer file.Close()
	// Read a bounded window from the end: the decoded tail is never longer
	// than the raw lines, which carry a timestamp and tags besides.
	raw, err := readTail(file, 64*1024)
	if err != nil {
		return nil, fmt.Errorf("read log %s: %w", logPath, err)
	}
	return DecodeLogTail(raw, maxLines, maxBytes), nil
}

// DecodeLogTail decodes CRI-format log lines and returns the content of the
// last maxLines lines, cut to its last maxBytes bytes.
func DecodeLogTail(raw []byte, maxLines, maxBytes int) []byte {
	var lines []string
	var partial strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 4096), len(raw)+1)
	for sc.Scan() {
		content, full := decodeCRILine(sc.Text())
		partial.WriteString(content)
		if full {
			lines = append(lines, partial.String()+"\n")
			partial.Reset()
		}
	}
	if partial.Len() > 0 {
		lines = append(lines, partial.String())
	}
	if len(lines) > maxLines {
		lines = lines[len(lines)-maxLines:]
	}
	out := []byte(strings.Join(lines, ""))
	if len(out) > maxBytes {
		out = out[len(out)-maxBytes:]
	}
	return out
}

// decodeCRILine returns a CRI log line's content and whether the line is
// complete (tag F) rather than partial (tag P).
func decodeCRILine(line string) (string, bool) {
	parts := strings.SplitN(line, " ", 4)
	if len(parts) < 3 || (parts[1] != "stdout" && parts[1] != "stderr") {
		return line, true
	}
	content := ""
	if len(parts) == 4 {
		content = parts[3]
	}
	tags := parts[2]
	return content, !strings.HasPrefix(tags, "P")
}

// openInside opens path for reading when it lies inside dir.
func openInside(dir, path string) (*os.File, error) {
	if !filepath.IsAbs(path) {
		return nil, fmt.Errorf("%w: %q is not absolute", ErrOutsideRoot, path)
	}
	rel, err := filepath.Rel(filepath.Clean(dir), filepath.Clean(path))
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return nil, fmt.Errorf("%w: %q is not inside %q", ErrOutsideRoot, path, dir)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.Open(rel)
}

// readTail returns at most max bytes from the end of f.
func readTail(f *os.File, max int) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	off := fi.Size() - int64(max)
	if off < 0 {
		off = 0
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(f, int64(max)))
}
