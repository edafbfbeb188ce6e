package podsync

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubeletkit/kubeletkit/cri"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// DefaultContainerLogLinksDir is where upstream kubelet links every
// container's log file, for log collectors that read one flat directory.
const DefaultContainerLogLinksDir = "/var/log/containers"

// maxFileName is the longest file name ext4 (and most Linux filesystems)
// take; a link's name is cut to fit, suffix included.
const maxFileName = 255

// logLinkName is the name of a container's log link:
// <pod>_<namespace>_<container>-<containerID>.log, cut to maxFileName.
func logLinkName(pod, namespace, container, containerID string) string {
	const suffix = ".log"
	name := pod + "_" + namespace + "_" + container + "-" + containerID
	if len(name) > maxFileName-len(suffix) {
		name = name[:maxFileName-len(suffix)]
	}
	return name + suffix
}

// linkLog links a started container's log file from the links directory,
// as upstream kubelet does; a failure is logged, never fatal: the
// container runs and its log is readable through the kubelet either way.
func (s *Syncer) linkLog(pod, namespace, container, containerID, logPath string) {
	if s.opts.ContainerLogLinksDir == "" || logPath == "" {
		return
	}
	link := filepath.Join(s.opts.ContainerLogLinksDir, logLinkName(pod, namespace, container, containerID))
	if err := os.MkdirAll(s.opts.ContainerLogLinksDir, 0o755); err != nil {
		s.log.Error("linking a container's log", "link", link, "err", err)
		return
	}
	// A link left by an earlier life of the same container ID points
	// to the same file; replace it rather than fail.
	if err := os.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Error("linking a container's log", "link", link, "err", err)
		return
	}
	if err := os.Symlink(logPath, link); err != nil {
		s.log.Error("linking a container's log", "link", link, "err", err)
	}
}

// unlinkLog removes the log link of a container the runtime is about to
// forget.
func (s *Syncer) unlinkLog(c *runtimeapi.Container) { s.unlinkLogOf(c.GetId(), c.GetLabels()) }

// unlinkLogOf is unlinkLog for the container with the given ID and labels.
func (s *Syncer) unlinkLogOf(id string, l map[string]string) {
	if s.opts.ContainerLogLinksDir == "" {
		return
	}
	name := logLinkName(l[cri.PodNameLabel], l[cri.PodNamespaceLabel], l[cri.ContainerNameLabel], id)
	if err := os.Remove(filepath.Join(s.opts.ContainerLogLinksDir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.log.Error("removing a container's log link", "link", name, "err", err)
	}
}

// removeDanglingLogLinks removes the links of the links directory whose log
// file is gone and whose container the runtime no longer has (known holds
// the IDs it has): their pod's logs were removed with the pod, or someone
// else removed the container. Only symbolic links named *.log are touched.
func (s *Syncer) removeDanglingLogLinks(known map[string]bool) error {
	dir := s.opts.ContainerLogLinksDir
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink == 0 || !strings.HasSuffix(e.Name(), ".log") {
			continue
		}
		name := strings.TrimSuffix(e.Name(), ".log")
		if i := strings.LastIndexByte(name, '-'); i >= 0 && known[name[i+1:]] {
			continue // a container whose log file is yet to be written
		}
		p := filepath.Join(dir, e.Name())
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
