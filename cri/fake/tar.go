package fake

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// tarOptions is a parsed tar command line.
type tarOptions struct {
	mode     byte // 'c', 'x' or 't'
	file     string
	dir      string
	gzip     bool
	verbose  bool
	keepTime bool // without m, extracted files keep the archive's times
	operands []string
}

// parseTarArgs reads tar's arguments as busybox does: a first argument of
// bundled letters without a dash ("xmf"), dashed letters ("-xmf"), long
// options (ignored), and f and C taking the next argument.
func parseTarArgs(args []string) (tarOptions, error) {
	o := tarOptions{dir: "/", keepTime: true}
	i := 0
	letters := func(ls string) error {
		for _, l := range ls {
			switch l {
			case 'c', 'x', 't':
				if o.mode != 0 && o.mode != byte(l) {
					return errors.New("tar: only one of -c, -t, -x may be given")
				}
				o.mode = byte(l)
			case 'f', 'C':
				if i >= len(args) {
					return fmt.Errorf("tar: option requires an argument -- '%c'", l)
				}
				if l == 'f' {
					o.file = args[i]
				} else {
					o.dir = args[i]
				}
				i++
			case 'z':
				o.gzip = true
			case 'v':
				o.verbose = true
			case 'm':
				o.keepTime = false
			case 'o', 'p':
			default:
				return fmt.Errorf("tar: invalid option -- '%c'", l)
			}
		}
		return nil
	}
	if len(args) > 0 && args[0] != "" && args[0][0] != '-' {
		i = 1
		if err := letters(args[0]); err != nil {
			return o, err
		}
	}
	for i < len(args) {
		a := args[i]
		i++
		switch {
		case a == "--":
			o.operands = append(o.operands, args[i:]...)
			i = len(args)
		case strings.HasPrefix(a, "--"):
			// --no-same-owner, --no-same-permissions and the like: the fake
			// has no owners, and keeps the archive's permissions.
		case len(a) > 1 && a[0] == '-':
			if err := letters(a[1:]); err != nil {
				return o, err
			}
		default:
			o.operands = append(o.operands, a)
		}
	}
	switch {
	case o.mode == 0:
		return o, errors.New("tar: need one of -c, -t or -x")
	case o.file != "" && o.file != "-":
		return o, fmt.Errorf("tar: can't open '%s': the fake runtime's tar reads and writes only its standard streams (-f -)", o.file)
	case o.mode == 'c' && len(o.operands) == 0:
		return o, errors.New("tar: empty archive")
	}
	return o, nil
}

// tar is enough of busybox tar for kubectl cp, on the container's own files
// and its mounts: "tar cf - PATH..." writes an archive of the paths to
// stdout (reading through mounts, links archived as links), "tar xf - [-C
// DIR]" extracts one from stdin into the container's own files (never into
// a mount: the fake does not write host files), "tar tf -" lists one; z
// compresses with gzip. Messages are busybox's where it has one.
func (p *proc) tar(args []string) int32 {
	o, err := parseTarArgs(args)
	if err != nil {
		fmt.Fprintln(p.err, err)
		return 1
	}
	if o.mode == 'c' {
		return p.tarCreate(o)
	}
	return p.tarRead(o)
}

func (p *proc) tarCreate(o tarOptions) int32 {
	var w io.Writer = p.out
	var gz *gzip.Writer
	if o.gzip {
		gz = gzip.NewWriter(p.out)
		w = gz
	}
	tw := tar.NewWriter(w)
	var code int32
	warned := false
	for _, op := range o.operands {
		name := path.Clean(op)
		if strings.HasPrefix(name, "/") {
			name = strings.TrimLeft(name, "/")
			if !warned {
				fmt.Fprintln(p.err, "tar: removing leading '/' from member names")
				warned = true
			}
		}
		src := cleanPath(path.Join(o.dir, op))
		if strings.HasPrefix(op, "/") {
			src = cleanPath(op)
		}
		n, err := p.archive(tw, src, name, o.verbose)
		switch {
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(p.err, "tar: %s: %s\n", op, errorText(err))
			code = 1
		case err != nil || n == 0:
			fmt.Fprintf(p.err, "tar: %s: No such file or directory\n", op)
			code = 1
		}
	}
	if err := tw.Close(); err != nil {
		return 1
	}
	if gz != nil && gz.Close() != nil {
		return 1
	}
	return code
}

// archive writes src (a clean container path) and what it holds to tw under
// the member name name, and returns how many entries it wrote.
func (p *proc) archive(tw *tar.Writer, src, name string, verbose bool) (int, error) {
	count := 0
	add := func(member string, hdr *tar.Header, data []byte) error {
		if member == "" || member == "." {
			return nil
		}
		hdr.Name = member
		if hdr.Typeflag == tar.TypeDir {
			hdr.Name += "/"
		}
		if verbose {
			fmt.Fprintln(p.err, hdr.Name)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		count++
		_, err := tw.Write(data)
		return err
	}
	pl := locate(p.mounts, src)
	if !pl.mount {
		err := p.own.walk(src, func(q string, n fileNode) error {
			hdr := &tar.Header{Mode: int64(n.mode.Perm()), ModTime: n.mtime, Format: tar.FormatPAX}
			switch {
			case n.mode.IsDir():
				hdr.Typeflag = tar.TypeDir
			case n.mode&fs.ModeSymlink != 0:
				hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, n.link
			default:
				hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(n.data))
			}
			return add(strings.TrimPrefix(joinMember(name, strings.TrimPrefix(q, src)), "/"), hdr, n.data)
		})
		return count, err
	}
	root, err := pl.resolve()
	if err != nil {
		return 0, err
	}
	err = filepath.WalkDir(root, func(host string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, host)
		if err != nil {
			return err
		}
		hdr := &tar.Header{Mode: int64(info.Mode().Perm()), ModTime: info.ModTime(), Format: tar.FormatPAX}
		var data []byte
		switch {
		case info.IsDir():
			hdr.Typeflag = tar.TypeDir
		case info.Mode()&fs.ModeSymlink != 0:
			hdr.Typeflag = tar.TypeSymlink
			if hdr.Linkname, err = os.Readlink(host); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if data, err = os.ReadFile(host); err != nil {
				return err
			}
			hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(data))
		default:
			return nil
		}
		if rel == "." {
			rel = ""
		}
		return add(joinMember(name, filepath.ToSlash(rel)), hdr, data)
	})
	return count, err
}

// joinMember joins a member name and a path below it.
func joinMember(name, rel string) string {
	rel = strings.TrimPrefix(rel, "/")
	switch {
	case rel == "":
		return name
	case name == "" || name == ".":
		return rel
	}
	return name + "/" + rel
}

// tarRead extracts (x) or lists (t) the archive on stdin.
func (p *proc) tarRead(o tarOptions) int32 {
	dir := cleanPath(o.dir)
	if o.mode == 'x' && !locate(p.mounts, dir).mount {
		if n, ok := p.own.stat(dir); !ok || !n.mode.IsDir() {
			fmt.Fprintf(p.err, "tar: can't change directory to '%s': No such file or directory\n", o.dir)
			return 1
		}
	}
	var r io.Reader = p.in
	if o.gzip {
		gz, err := gzip.NewReader(p.in)
		if err != nil {
			fmt.Fprintln(p.err, "tar: invalid gzip magic")
			return 1
		}
		defer gz.Close()
		r = gz
	}
	tr := tar.NewReader(r)
	now := p.r.clock.Now()
	var code int32
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return code
		}
		if err != nil {
			fmt.Fprintln(p.err, "tar: short read")
			return 1
		}
		if o.mode == 't' || o.verbose {
			fmt.Fprintln(p.out, hdr.Name)
		}
		if o.mode == 't' {
			continue
		}
		if err := p.extract(tr, hdr, dir, o.keepTime, now); err != nil {
			fmt.Fprintf(p.err, "tar: %v\n", err)
			code = 1
			if errors.Is(err, errNoSpace) {
				return code
			}
		}
	}
}

// extract writes one archive member under dir among the container's own
// files. A member whose name climbs out of dir is refused, as one under a
// mount is.
func (p *proc) extract(tr *tar.Reader, hdr *tar.Header, dir string, keepTime bool, now time.Time) error {
	rel := path.Clean(strings.TrimLeft(hdr.Name, "/"))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return fmt.Errorf("skipping '%s': its name leaves the target directory", hdr.Name)
	}
	target := cleanPath(path.Join(dir, rel))
	if locate(p.mounts, target).mount {
		return fmt.Errorf("can't open '%s': %s", rel, errorText(errMountWrite))
	}
	mtime := hdr.ModTime
	if !keepTime {
		mtime = now
	}
	n := fileNode{mode: fs.FileMode(hdr.Mode).Perm(), mtime: mtime}
	switch hdr.Typeflag {
	case tar.TypeDir:
		n.mode |= fs.ModeDir
	case tar.TypeReg:
		if hdr.Size > MaxContainerFiles {
			return fmt.Errorf("write error: %s", errorText(errNoSpace))
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return errors.New("short read")
		}
		n.data = data
	case tar.TypeSymlink:
		n.mode, n.link = fs.ModeSymlink|0o777, hdr.Linkname
	case tar.TypeLink:
		linked, ok := p.own.stat(cleanPath(path.Join(dir, strings.TrimLeft(hdr.Linkname, "/"))))
		if !ok || linked.mode.IsDir() {
			return fmt.Errorf("can't create hardlink '%s': No such file or directory", rel)
		}
		n.mode, n.data = linked.mode, linked.data
	default:
		// Devices, FIFOs: the fake has no use for them.
		return nil
	}
	if err := p.own.put(target, n); err != nil {
		if errors.Is(err, errNoSpace) {
			return fmt.Errorf("write error: %s", errorText(err))
		}
		return fmt.Errorf("can't open '%s': %s", rel, errorText(err))
	}
	return nil
}
