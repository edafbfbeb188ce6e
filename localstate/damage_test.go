package localstate_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/localstate"
)

// testKey seals the fixtures' secrets and tokens.
var testKey = localstate.SecretKey("0123456789abcdef0123456789abcdef")

// snapshot is everything a store holds, by kind and key, as read back.
type snapshot map[localstate.Kind]map[string][]byte

func snapshotOf(t testing.TB, s localstate.Store) snapshot {
	t.Helper()
	out := snapshot{}
	for _, k := range localstate.Kinds() {
		vals, err := s.List(k)
		if err != nil {
			t.Fatalf("list %s: %v", k, err)
		}
		out[k] = vals
	}
	return out
}

func (s snapshot) equal(o snapshot) bool {
	for _, k := range localstate.Kinds() {
		if len(s[k]) != len(o[k]) {
			return false
		}
		for key, v := range s[k] {
			if w, ok := o[k][key]; !ok || !bytes.Equal(v, w) {
				return false
			}
		}
	}
	return true
}

func (s snapshot) empty() bool {
	for _, vals := range s {
		if len(vals) > 0 {
			return false
		}
	}
	return true
}

// fixture is a valid store file and what it holds after its last write
// (after) and before it (before).
type fixture struct {
	path          string
	before, after snapshot
}

// buildStore writes a store at path through State: pods pods (each with a
// status), a configMap, a secret and a token per five pods, services, and
// last a configMap on its own, so that before and after differ by one
// transaction.
func buildStore(t testing.TB, path string, pods int) fixture {
	t.Helper()
	b, err := localstate.OpenBolt(path, localstate.BoltOptions{SecretKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	st, err := localstate.New(b)
	if err != nil {
		t.Fatal(err)
	}
	var ps []*v1.Pod
	for i := range pods {
		p := testPod(fmt.Sprintf("pod-%03d", i), "1")
		p.Annotations = map[string]string{"note": strings.Repeat(string(rune('a'+i%26)), 600)}
		ps = append(ps, p)
	}
	if _, err := st.SetPods(ps); err != nil {
		t.Fatal(err)
	}
	for i, p := range ps {
		if err := st.PutPodStatus(p, v1.PodStatus{Phase: v1.PodRunning, Message: fmt.Sprintf("running %d", i)}); err != nil {
			t.Fatal(err)
		}
		if i%5 != 0 {
			continue
		}
		name := fmt.Sprintf("obj-%03d", i)
		meta := metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "1"}
		if err := st.PutConfigMap(&v1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"k": strings.Repeat("c", 300)}}); err != nil {
			t.Fatal(err)
		}
		if err := st.PutSecret(&v1.Secret{ObjectMeta: meta, Data: map[string][]byte{"password": []byte("s3cret-" + name)}}); err != nil {
			t.Fatal(err)
		}
		tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", Name: p.Name, UID: p.UID}}}
		tr.Status.Token = "token-of-" + p.Name
		if err := st.PutToken(localstate.TokenKey("default", "default", tr), tr); err != nil {
			t.Fatal(err)
		}
	}
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes", UID: "uid-svc", ResourceVersion: "1"}}
	if _, err := st.SetServices([]*v1.Service{svc}); err != nil {
		t.Fatal(err)
	}
	f := fixture{path: path, before: snapshotOf(t, b)}
	last := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "last", UID: "uid-last", ResourceVersion: "1"}}
	if err := st.PutConfigMap(last); err != nil {
		t.Fatal(err)
	}
	f.after = snapshotOf(t, b)
	return f
}

// fileLayout is what the damage cases aim at in a bbolt file, found with
// bbolt's own page inspection and the meta pages' documented offsets.
type fileLayout struct {
	pageSize         int
	current          int // the meta page of the last transaction
	dataEnd          int // the high-water mark, in bytes
	freelist, branch int
	leaves           []int
	secretAt         int // the offset of a sealed secret's value on its leaf page
}

// Offsets in a meta page: the header is 16 bytes; then magic, version,
// page size and flags (4 bytes each), the root bucket's page id and
// sequence, the freelist's page id, the high-water mark, the transaction
// id and the checksum (8 bytes each).
const (
	metaMagic    = 16
	metaVersion  = 20
	metaRoot     = 32
	metaFreelist = 48
	metaHWM      = 56
	metaTxid     = 64
	metaChecksum = 72
)

func layoutOf(t testing.TB, path string) fileLayout {
	t.Helper()
	cp := filepath.Join(t.TempDir(), "inspect.db")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(cp, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l := fileLayout{pageSize: db.Info().PageSize}
	if binary.NativeEndian.Uint64(data[l.pageSize+metaTxid:]) > binary.NativeEndian.Uint64(data[metaTxid:]) {
		l.current = 1
	}
	l.dataEnd = int(binary.NativeEndian.Uint64(data[l.current*l.pageSize+metaHWM:])) * l.pageSize
	err = db.View(func(tx *bolt.Tx) error {
		for id := 2; ; id++ {
			p, err := tx.Page(id)
			if err != nil || p == nil {
				return err
			}
			switch p.Type {
			case "freelist":
				l.freelist = id
			case "branch":
				l.branch = id
			case "leaf":
				l.leaves = append(l.leaves, id)
			}
			id += p.OverflowCount
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	var secret []byte
	_ = db.View(func(tx *bolt.Tx) error {
		_, v := tx.Bucket([]byte(localstate.Secrets)).Cursor().First()
		secret = bytes.Clone(v)
		return nil
	})
	for _, id := range l.leaves { // live pages only: freed ones may hold old copies
		if i := bytes.Index(data[id*l.pageSize:(id+1)*l.pageSize], secret); i >= 0 && secret != nil {
			l.secretAt = id*l.pageSize + i + len(secret)/2
		}
	}
	if l.freelist == 0 || l.branch == 0 || len(l.leaves) == 0 || l.secretAt == 0 {
		t.Fatalf("the fixture lacks a page to damage: %+v", l)
	}
	return l
}

// damage is one way to damage the file at path, whose layout is l.
type damage struct {
	name string
	do   func(t testing.TB, path string, data []byte, l fileLayout) // writes the damaged file
	want func(l fileLayout) outcome
}

type outcome string

const (
	intact    outcome = "intact"             // every value as after the last write
	previous  outcome = "previous write"     // every value as before the last write
	fresh     outcome = "empty, in place"    // an empty store written into the file
	movedAway outcome = "moved aside, empty" // the damaged file moved aside, the store empty
	dropped   outcome = "intact but one secret dropped"
)

func always(o outcome) func(fileLayout) outcome { return func(fileLayout) outcome { return o } }

// ifCurrent is previous when meta page n is the last transaction's, else
// intact.
func ifCurrent(n int) func(fileLayout) outcome {
	return func(l fileLayout) outcome {
		if l.current == n {
			return previous
		}
		return intact
	}
}

func write(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func truncated(size func(n int, l fileLayout) int) func(testing.TB, string, []byte, fileLayout) {
	return func(t testing.TB, path string, data []byte, l fileLayout) { write(t, path, data[:size(len(data), l)]) }
}

// overwritten writes data with fn applied to a copy.
func overwritten(fn func(d []byte, l fileLayout)) func(testing.TB, string, []byte, fileLayout) {
	return func(t testing.TB, path string, data []byte, l fileLayout) {
		d := bytes.Clone(data)
		fn(d, l)
		write(t, path, d)
	}
}

func garbage(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 35))
	out := make([]byte, n)
	for i := range out {
		out[i] = byte(r.Uint32())
	}
	return out
}

// flip inverts the bytes [off, off+n) of the current meta page.
func flip(off, n int) func(d []byte, l fileLayout) {
	return func(d []byte, l fileLayout) {
		base := l.current * l.pageSize
		for i := base + off; i < base+off+n; i++ {
			d[i] ^= 0xFF
		}
	}
}

// resum rewrites the checksum of meta page n, as bbolt computes it.
func resum(d []byte, l fileLayout, n int) {
	m := d[n*l.pageSize+16 : n*l.pageSize+16+64]
	h := fnv.New64a()
	_, _ = h.Write(m[:56])
	binary.NativeEndian.PutUint64(m[56:], h.Sum64())
}

func damages() []damage {
	return []damage{
		{"truncated to 0 bytes", truncated(func(int, fileLayout) int { return 0 }), always(fresh)},
		{"truncated to half", truncated(func(n int, _ fileLayout) int { return n / 2 }), always(movedAway)},
		{"truncated to one page", truncated(func(_ int, l fileLayout) int { return l.pageSize }), always(movedAway)},
		{"truncated to just past the meta pages", truncated(func(_ int, l fileLayout) int { return 2*l.pageSize + 100 }), always(movedAway)},
		{"truncated inside the last page of data, not at a page boundary", truncated(func(_ int, l fileLayout) int { return l.dataEnd - l.pageSize/2 - 1 }), always(movedAway)},
		{"truncated past the data, not at a page boundary", truncated(func(_ int, l fileLayout) int { return l.dataEnd + 100 }), always(intact)},
		{"meta page 0 zeroed", overwritten(func(d []byte, l fileLayout) { clear(d[:l.pageSize]) }), ifCurrent(0)},
		{"meta page 1 zeroed", overwritten(func(d []byte, l fileLayout) { clear(d[l.pageSize : 2*l.pageSize]) }), ifCurrent(1)},
		{"both meta pages zeroed", overwritten(func(d []byte, l fileLayout) { clear(d[:2*l.pageSize]) }), always(movedAway)},
		{"magic flipped (current meta)", overwritten(flip(metaMagic, 4)), always(previous)},
		{"version flipped (current meta)", overwritten(flip(metaVersion, 4)), always(previous)},
		{"checksum flipped (current meta)", overwritten(flip(metaChecksum, 8)), always(previous)},
		{"root page id flipped (current meta)", overwritten(flip(metaRoot, 1)), always(previous)},
		{"freelist page id flipped (current meta)", overwritten(flip(metaFreelist, 1)), always(previous)},
		{"random bytes over the freelist page", overwritten(func(d []byte, l fileLayout) {
			copy(d[l.freelist*l.pageSize:], garbage(1, l.pageSize))
		}), always(movedAway)},
		{"random bytes over a branch page", overwritten(func(d []byte, l fileLayout) {
			copy(d[l.branch*l.pageSize:], garbage(2, l.pageSize))
		}), always(movedAway)},
		{"random bytes over a leaf page", overwritten(func(d []byte, l fileLayout) {
			copy(d[l.leaves[len(l.leaves)/2]*l.pageSize:], garbage(3, l.pageSize))
		}), always(movedAway)},
		{"a sector of random bytes inside a leaf page, past its header", overwritten(func(d []byte, l fileLayout) {
			copy(d[l.leaves[len(l.leaves)/3]*l.pageSize+512:], garbage(6, 512))
		}), always(movedAway)},
		{"a sector of random bytes inside a branch page, past its header", overwritten(func(d []byte, l fileLayout) {
			copy(d[l.branch*l.pageSize+16:], garbage(7, 512-16))
		}), always(movedAway)},
		{"random bytes appended", func(t testing.TB, path string, data []byte, _ fileLayout) {
			write(t, path, append(bytes.Clone(data), garbage(4, 3000)...))
		}, always(intact)},
		{"a file of random bytes", func(t testing.TB, path string, data []byte, _ fileLayout) {
			write(t, path, garbage(5, len(data)))
		}, always(movedAway)},
		{"a directory at the path", func(t testing.TB, path string, _ []byte, _ fileLayout) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, always(movedAway)},
		// Beyond the trial's: damage no checksum or bbolt check sees before
		// it follows a page id.
		{"root page id out of range, checksum rewritten (both metas)", overwritten(func(d []byte, l fileLayout) {
			for n := range 2 {
				binary.NativeEndian.PutUint64(d[n*l.pageSize+metaRoot:], 1<<40)
				resum(d, l, n)
			}
		}), always(movedAway)},
		{"a branch page whose first child is itself", overwritten(func(d []byte, l fileLayout) {
			binary.NativeEndian.PutUint64(d[l.branch*l.pageSize+16+8:], uint64(l.branch))
		}), always(movedAway)},
		{"a freelist count of 2^60", overwritten(func(d []byte, l fileLayout) {
			p := d[l.freelist*l.pageSize:]
			binary.NativeEndian.PutUint16(p[10:], 0xFFFF)
			binary.NativeEndian.PutUint64(p[16:], 1<<60)
		}), always(movedAway)},
		{"a branch key that is not its child's first key (its offset zeroed)", overwritten(func(d []byte, l fileLayout) {
			binary.NativeEndian.PutUint32(d[l.branch*l.pageSize+16:], 0)
		}), always(movedAway)},
		{"a leaf element's key size zeroed", overwritten(func(d []byte, l fileLayout) {
			binary.NativeEndian.PutUint32(d[l.leaves[0]*l.pageSize+16+8:], 0)
		}), always(movedAway)},
		{"a byte flipped inside a sealed secret", overwritten(func(d []byte, l fileLayout) {
			d[l.secretAt] ^= 0x01
		}), always(dropped)},
	}
}

// TestOpenBoltDamaged damages copies of a valid store in each way of
// damages and checks that OpenBolt returns a usable store for each: the
// data intact (or as of the write before the last, when a meta page was
// hit), or an empty store with the damaged file moved aside. With -v it
// prints the outcomes as a table (docs/localstate.md has it).
func TestOpenBoltDamaged(t *testing.T) {
	f := buildStore(t, filepath.Join(t.TempDir(), "valid.db"), 150)
	data, err := os.ReadFile(f.path)
	if err != nil {
		t.Fatal(err)
	}
	l := layoutOf(t, f.path)
	if dir := os.Getenv("KK_DAMAGED_DIR"); dir != "" {
		write(t, filepath.Join(dir, "valid.db"), data) // what exportDamaged's files were damaged from
	}
	at := time.Date(2026, 3, 5, 6, 7, 8, 0, time.UTC)
	var table []string
	for i, d := range damages() {
		t.Run(d.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "localstate.db")
			d.do(t, path, data, l)
			damaged, _ := os.ReadFile(path) // nil for the directory
			exportDamaged(t, i+1, d.name, path, damaged, d.want(l))
			b, err := localstate.OpenBolt(path, localstate.BoltOptions{SecretKey: testKey, Clock: clocktesting.NewFakePassiveClock(at)})
			if err != nil {
				t.Fatalf("OpenBolt = %v, want a usable store", err)
			}
			got := snapshotOf(t, b)
			rec, recovered := b.Recovered()
			var o outcome
			switch {
			case recovered && rec.Aside != "":
				o = movedAway
				if want := path + ".corrupt-20260305T060708Z"; rec.Aside != want {
					t.Errorf("moved aside to %s, want %s", rec.Aside, want)
				}
				if aside, _ := os.ReadFile(rec.Aside); !bytes.Equal(aside, damaged) {
					t.Errorf("the file moved aside does not hold the damaged bytes")
				}
				if !got.empty() {
					t.Errorf("a store started after moving the file aside holds %v", got)
				}
			case got.equal(f.after):
				o = intact
			case got.equal(f.before):
				o = previous
			case got.empty():
				o = fresh
			case len(got[localstate.Secrets]) == len(f.after[localstate.Secrets])-1:
				o = dropped
			default:
				t.Fatalf("the store holds neither the data nor nothing")
			}
			if recovered && !errors.Is(rec.Cause, localstate.ErrDamaged) {
				t.Errorf("Recovery.Cause = %v, want ErrDamaged", rec.Cause)
			}
			if want := d.want(l); o != want {
				t.Errorf("outcome %q, want %q (recovered %v: %v)", o, want, recovered, rec)
			}
			detail := ""
			if recovered {
				detail = shorten(rec.Cause.Error())
				if rec.Aside == "" {
					detail = "kept: " + detail
				}
			}
			table = append(table, fmt.Sprintf("| %d | %s | %s | %s |", i+1, d.name, o, detail))

			usable(t, b, path)
		})
	}
	t.Logf("\n| # | damage | outcome | cause |\n|---|---|---|---|\n%s", strings.Join(table, "\n"))
}

// exportDamaged copies the damaged file of case n into the directory
// $KK_DAMAGED_DIR, when it is set, as n.db (the valid file is valid.db), and adds a line "n<TAB>want<TAB>
// name" to its cases.tsv: hack/chaos.sh starts minikubelet on each. A
// directory at the path is exported as a directory.
func exportDamaged(t *testing.T, n int, name, path string, damaged []byte, want outcome) {
	dir := os.Getenv("KK_DAMAGED_DIR")
	if dir == "" {
		return
	}
	out := filepath.Join(dir, fmt.Sprintf("%02d.db", n))
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		if err := os.Mkdir(out, 0o700); err != nil {
			t.Fatal(err)
		}
	} else {
		write(t, out, damaged)
	}
	f, err := os.OpenFile(filepath.Join(dir, "cases.tsv"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := fmt.Fprintf(f, "%02d\t%s\t%s\n", n, want, name); err != nil {
		t.Fatal(err)
	}
}

// usable checks that the store b, just opened at path, takes a write (a
// pod and a sealed secret), closes, and opens again without damage and
// with what it wrote. It closes b.
func usable(t testing.TB, b *localstate.Bolt, path string) {
	t.Helper()
	if err := b.Write(localstate.Batch{Puts: []localstate.Entry{put(localstate.Pods, "after-open", "1"), put(localstate.Secrets, "ns/after-open", "s")}}); err != nil {
		t.Fatalf("Write after the open: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := localstate.OpenBolt(path, localstate.BoltOptions{SecretKey: testKey})
	if err != nil {
		t.Fatalf("second OpenBolt = %v", err)
	}
	defer b.Close()
	if rec, ok := b.Recovered(); ok {
		t.Fatalf("the second open found damage: %v", rec)
	}
	for _, k := range []localstate.Key{{Kind: localstate.Pods, Key: "after-open"}, {Kind: localstate.Secrets, Key: "ns/after-open"}} {
		if _, ok, err := b.Get(k.Kind, k.Key); !ok || err != nil {
			t.Fatalf("%s %s written after the open: %v %v", k.Kind, k.Key, ok, err)
		}
	}
}

func shorten(s string) string {
	s = strings.TrimPrefix(s, localstate.ErrDamaged.Error()+": ")
	if len(s) > 140 {
		s = s[:140] + "…"
	}
	return strings.ReplaceAll(s, "|", "\\|")
}

// A file damaged under a running store (truncated to half here) makes its
// next read fail with ErrDamaged, where bbolt would fault (SIGBUS), and the
// store refuses every call after it; the next OpenBolt moves it aside.
func TestBoltDamagedWhileOpen(t *testing.T) {
	f := buildStore(t, filepath.Join(t.TempDir(), "s.db"), 150)
	b, err := localstate.OpenBolt(f.path, localstate.BoltOptions{SecretKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(f.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(f.path, info.Size()/4); err != nil {
		t.Fatal(err)
	}
	_, err = b.List(localstate.Pods)
	if !errors.Is(err, localstate.ErrDamaged) {
		t.Fatalf("List of a truncated file = %v, want ErrDamaged", err)
	}
	if _, _, err := b.Get(localstate.ConfigMaps, "default/last"); !errors.Is(err, localstate.ErrDamaged) {
		t.Fatalf("Get after the fault = %v, want ErrDamaged", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b, err = localstate.OpenBolt(f.path, localstate.BoltOptions{SecretKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if rec, ok := b.Recovered(); !ok || rec.Aside == "" {
		t.Fatalf("Recovered = %v %v, want the file moved aside", rec, ok)
	}
}

// A symbolic link at the path is refused, and the file it points to is
// left as it was; so is a link created at the path of a file moved aside.
func TestOpenBoltRefusesSymlinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "precious")
	write(t, target, []byte("not yours"))
	for _, tc := range []struct {
		name string
		link string
	}{
		{"to a file", target},
		{"dangling", filepath.Join(dir, "absent")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "localstate.db")
			if err := os.Symlink(tc.link, path); err != nil {
				t.Fatal(err)
			}
			_, err := localstate.OpenBolt(path, localstate.BoltOptions{})
			if !errors.Is(err, localstate.ErrInvalidArgument) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "symbolic link") {
				t.Fatalf("OpenBolt = %v, want ErrInvalidArgument naming %s as a symbolic link", err, path)
			}
			if got, _ := os.ReadFile(target); string(got) != "not yours" {
				t.Fatalf("the link's target was written: %q", got)
			}
			if _, err := os.Lstat(tc.link); tc.link != target && !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the dangling link's target was created")
			}
		})
	}
}

// A file that is neither regular nor a directory is refused, not moved
// aside nor written.
func TestOpenBoltRefusesSpecialFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "localstate.db")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, err := localstate.OpenBolt(path, localstate.BoltOptions{})
	if !errors.Is(err, localstate.ErrInvalidArgument) || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("OpenBolt on a FIFO = %v, want ErrInvalidArgument", err)
	}
	if info, err := os.Lstat(path); err != nil || info.Mode().Type() != os.ModeNamedPipe {
		t.Fatalf("the FIFO was moved: %v", err)
	}
}

// Damage is moved aside under a name of its own each time: a second
// damaged file in the same second does not replace the first.
func TestMoveAsideKeepsEveryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "localstate.db")
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 3, 5, 6, 7, 8, 0, time.UTC))
	var asides []string
	for i := range 3 {
		write(t, path, garbage(uint64(i), 8192))
		b, err := localstate.OpenBolt(path, localstate.BoltOptions{Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		rec, _ := b.Recovered()
		asides = append(asides, filepath.Base(rec.Aside))
		_ = b.Close()
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"localstate.db.corrupt-20260305T060708Z", "localstate.db.corrupt-20260305T060708Z.1", "localstate.db.corrupt-20260305T060708Z.2"}
	if !slices.Equal(asides, want) {
		t.Fatalf("moved aside to %v, want %v", asides, want)
	}
}
