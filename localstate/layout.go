package localstate

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
)

// The walk below reads a bbolt file (format version 2) with plain reads and
// checks every bound bbolt trusts before it follows a page id or an element
// offset through its memory map. bbolt turns a bad bound into a fault on
// the map (SIGBUS past the end of a truncated file, SIGSEGV past the map),
// an allocation sized by a garbage count, or an endless descent through a
// page that names itself: the first is recoverable only in the goroutine
// that set debug.SetPanicOnFault, and the others never are. bbolt's own
// consistency check (Tx.Check) runs in a goroutine it starts, so it is run
// only on a file this walk has passed.
//
// The layout, as bbolt writes it: a page starts with a 16-byte header (id
// uint64, flags uint16, count uint16, overflow uint32) and spans
// overflow+1 pages. Pages 0 and 1 are meta pages; a meta (after the
// header) is magic, version, page size and flags (uint32 each), the root
// bucket (root page id, sequence), the freelist page id, the high-water
// mark (the first page id past the data), the transaction id and an
// FNV-64a checksum of the 56 bytes before it. A branch page holds count
// elements of 16 bytes (key offset and size, uint32 each, child page id);
// a leaf page holds count elements of 16 bytes (flags, key offset, key
// size, value size, uint32 each), each offset counted from the element's
// own first byte. A leaf element with flag 1 is a bucket: its value is the
// bucket's root page id and sequence, followed, when the root is 0, by an
// inline leaf page. A freelist page holds count page ids, or, when count is
// 0xFFFF, the real count as its first uint64. Integers are in the
// machine's byte order (bbolt maps the file onto its structs).
const (
	pageHeaderSize   = 16
	elementSize      = 16
	bucketHeaderSize = 16
	metaSize         = 64
	metaSummed       = 56

	branchPage   = 0x01
	leafPage     = 0x02
	metaPage     = 0x04
	freelistPage = 0x10
	bucketLeaf   = 0x01

	boltMagic   = 0xED0CDAED
	boltVersion = 2
	noFreelist  = ^uint64(0)
	countInList = 0xFFFF
)

var order = binary.NativeEndian

// boltMeta is one meta page of a bbolt file.
type boltMeta struct {
	page     int // 0 or 1
	pageSize uint32
	root     uint64
	freelist uint64
	hwm      uint64
	txid     uint64
	err      error // why it does not validate; nil when it does
}

// readMeta decodes meta page n from buf, the page's bytes.
func readMeta(n int, buf []byte) boltMeta {
	m := boltMeta{page: n}
	if len(buf) < pageHeaderSize+metaSize {
		m.err = errors.New("short")
		return m
	}
	b := buf[pageHeaderSize : pageHeaderSize+metaSize]
	m.pageSize = order.Uint32(b[8:])
	m.root = order.Uint64(b[16:])
	m.freelist = order.Uint64(b[32:])
	m.hwm = order.Uint64(b[40:])
	m.txid = order.Uint64(b[48:])
	h := fnv.New64a()
	_, _ = h.Write(b[:metaSummed])
	switch {
	case order.Uint32(b[0:]) != boltMagic:
		m.err = errors.New("bad magic")
	case order.Uint32(b[4:]) != boltVersion:
		m.err = fmt.Errorf("format version %d, not %d", order.Uint32(b[4:]), boltVersion)
	case order.Uint64(b[56:]) != h.Sum64():
		m.err = errors.New("bad checksum")
	}
	return m
}

// layout is what walkLayout found.
type layout struct {
	meta   boltMeta // the meta page bbolt reads
	other  boltMeta // the other one
	pages  int      // pages reachable from the meta
	leaves int
	// headers is whether both meta pages have a meta page's header (their
	// own id, the meta flag): Tx.Check asserts it, by a panic.
	headers bool
}

// walkLayout checks the structure of the bbolt file r of size bytes, whose
// page size bbolt found to be pageSize and whose current transaction bbolt
// says is txid with its data ending at dataSize bytes: both meta pages,
// the freelist page and every page of every bucket's tree, by the bounds
// bbolt relies on. It reads each reachable page once, with no memory
// map, holding a page per level of the trees walked (and a page's
// overflow while it is read).
func walkLayout(r io.ReaderAt, size int64, pageSize int, txid uint64, dataSize int64) (layout, error) {
	var l layout
	ps := int64(pageSize)
	if ps < 512 || ps > 1<<24 || ps&(ps-1) != 0 {
		return l, fmt.Errorf("page size %d is not a power of two between 512 bytes and 16 MiB", ps)
	}
	if size < 2*ps {
		return l, fmt.Errorf("%d bytes is less than the two meta pages", size)
	}
	buf := make([]byte, pageHeaderSize+metaSize)
	var metas [2]boltMeta
	l.headers = true
	for i := range metas {
		if _, err := r.ReadAt(buf, int64(i)*ps); err != nil {
			return l, fmt.Errorf("read meta page %d: %w", i, err)
		}
		metas[i] = readMeta(i, buf)
		if order.Uint64(buf) != uint64(i) || order.Uint16(buf[8:]) != metaPage {
			l.headers = false
		}
	}
	// bbolt reads the meta of the higher transaction when it validates,
	// else the other.
	a, b := metas[0], metas[1]
	if b.txid > a.txid {
		a, b = b, a
	}
	if a.err != nil {
		a, b = b, a
	}
	if a.err != nil {
		return l, fmt.Errorf("no meta page validates: page 0: %v; page 1: %v", metas[0].err, metas[1].err)
	}
	l.meta, l.other = a, b
	m := a
	if m.txid != txid || int64(m.hwm)*ps != dataSize {
		return l, fmt.Errorf("meta page %d (transaction %d, %d pages) is not the one bbolt read (transaction %d, %d bytes)", m.page, m.txid, m.hwm, txid, dataSize)
	}
	if int64(m.pageSize) != ps {
		return l, fmt.Errorf("meta page %d says pages of %d bytes, bbolt reads %d", m.page, m.pageSize, ps)
	}
	if m.hwm < 3 || m.hwm > uint64(size/ps) {
		return l, fmt.Errorf("the data ends at page %d; the file holds %d whole pages of %d bytes (truncated?)", m.hwm, size/ps, ps)
	}
	w := &walker{r: r, ps: ps, hwm: m.hwm, seen: make([]uint64, (m.hwm+63)/64)}
	w.mark(0)
	w.mark(1)
	var free []uint64
	if m.freelist != noFreelist {
		var err error
		if free, err = w.freelist(m.freelist); err != nil {
			return l, err
		}
	}
	if _, err := w.bucketTree(m.root, true); err != nil {
		return l, fmt.Errorf("root bucket: %w", err)
	}
	// A page both free and in use, or free twice, makes bbolt panic on
	// the next write, or write over live data.
	for _, p := range free {
		if !w.mark(p) {
			return l, fmt.Errorf("freelist: page %d is free and in use, or free twice", p)
		}
	}
	l.pages, l.leaves = w.pages, w.leaves
	return l, nil
}

// walker walks the pages of one bbolt file.
type walker struct {
	r      io.ReaderAt
	ps     int64
	hwm    uint64
	seen   []uint64 // a bit per page: reached (read, or free)
	pages  int
	leaves int
	spare  [][]byte // page buffers to reuse: the walk holds one per level
}

// release gives back a buffer of span.
func (w *walker) release(buf []byte) { w.spare = append(w.spare, buf) }

// mark marks page p reached, and reports whether it was not before.
func (w *walker) mark(p uint64) bool {
	word, bit := p/64, uint64(1)<<(p%64)
	if w.seen[word]&bit != 0 {
		return false
	}
	w.seen[word] |= bit
	w.pages++
	return true
}

// span reads page id and its overflow pages, checking that they lie below
// the high-water mark, that no page of them was reached before, and that
// the header names id.
func (w *walker) span(id uint64) ([]byte, error) {
	if id < 2 || id >= w.hwm {
		return nil, fmt.Errorf("page %d: outside pages 2 to %d", id, w.hwm-1)
	}
	var buf []byte
	if n := len(w.spare); n > 0 {
		buf, w.spare = w.spare[n-1][:w.ps], w.spare[:n-1]
	} else {
		buf = make([]byte, w.ps)
	}
	if _, err := w.r.ReadAt(buf, int64(id)*w.ps); err != nil {
		return nil, fmt.Errorf("page %d: %w", id, err)
	}
	if got := order.Uint64(buf); got != id {
		return nil, fmt.Errorf("page %d: its header names page %d", id, got)
	}
	overflow := uint64(order.Uint32(buf[12:]))
	if overflow >= w.hwm-id {
		return nil, fmt.Errorf("page %d: %d overflow pages run past page %d", id, overflow, w.hwm-1)
	}
	for p := id; p <= id+overflow; p++ {
		if !w.mark(p) {
			return nil, fmt.Errorf("page %d: reached twice", p)
		}
	}
	if overflow > 0 {
		buf = append(buf, make([]byte, int64(overflow)*w.ps)...) // not kept: spare buffers are a page
		if _, err := w.r.ReadAt(buf[w.ps:], int64(id+1)*w.ps); err != nil {
			return nil, fmt.Errorf("page %d: %w", id, err)
		}
	}
	return buf, nil
}

// freelist checks the freelist page id, its count fitting the page and
// every free page lying between the meta pages and the high-water mark,
// and returns the free pages.
func (w *walker) freelist(id uint64) ([]uint64, error) {
	buf, err := w.span(id)
	if err != nil {
		return nil, fmt.Errorf("freelist: %w", err)
	}
	if f := order.Uint16(buf[8:]); f != freelistPage {
		return nil, fmt.Errorf("freelist: page %d has flags %#x, not a freelist's", id, f)
	}
	ids := buf[pageHeaderSize:]
	n := uint64(order.Uint16(buf[10:]))
	if n == countInList {
		if len(ids) < 8 {
			return nil, fmt.Errorf("freelist: page %d: no room for its count", id)
		}
		n, ids = order.Uint64(ids), ids[8:]
	}
	if n > uint64(len(ids)/8) {
		return nil, fmt.Errorf("freelist: page %d: %d ids do not fit its %d bytes", id, n, len(buf))
	}
	free := make([]uint64, n)
	for i := range free {
		p := order.Uint64(ids[8*i:])
		if p < 2 || p >= w.hwm {
			return nil, fmt.Errorf("freelist: page %d: free page %d outside pages 2 to %d", id, p, w.hwm-1)
		}
		free[i] = p
	}
	return free, nil
}

// bucketTree walks the tree of the bucket whose root page is id (the root
// bucket holds buckets only) and returns its first key.
func (w *walker) bucketTree(id uint64, root bool) ([]byte, error) {
	buf, err := w.span(id)
	if err != nil {
		return nil, err
	}
	first, err := w.node(id, buf, root)
	if len(buf) == int(w.ps) {
		w.release(buf)
	}
	return first, err
}

// node checks the branch or leaf page buf (page id, or an inline page when
// id is 0), walks what it leads to, and returns a copy of its first key.
//
// Beyond bounds, it holds bbolt to invariants its writes keep and a read
// does not check, and on which a later write relies: no key is empty, and
// a branch's key for a child is the child's first key (bbolt finds the
// child's entry in its parent by that key when it writes the child again;
// another key there makes it add a second entry, and the tree goes wrong).
func (w *walker) node(id uint64, buf []byte, root bool) ([]byte, error) {
	if len(buf) < pageHeaderSize {
		return nil, fmt.Errorf("inline page: %d bytes, short of a header", len(buf))
	}
	flags, count := order.Uint16(buf[8:]), int(order.Uint16(buf[10:]))
	if pageHeaderSize+count*elementSize > len(buf) {
		return nil, fmt.Errorf("page %d: %d elements do not fit its %d bytes", id, count, len(buf))
	}
	switch {
	case flags == branchPage && id != 0:
		if count == 0 {
			return nil, fmt.Errorf("page %d: a branch without elements", id)
		}
		type child struct {
			key []byte
			id  uint64
		}
		children := make([]child, 0, count)
		for i := range count {
			e := pageHeaderSize + i*elementSize
			pos, ksize := uint64(order.Uint32(buf[e:])), uint64(order.Uint32(buf[e+4:]))
			start := uint64(e) + pos
			if start+ksize > uint64(len(buf)) {
				return nil, fmt.Errorf("page %d: key %d runs past the page", id, i)
			}
			if ksize == 0 {
				return nil, fmt.Errorf("page %d: key %d is empty", id, i)
			}
			children = append(children, child{buf[start : start+ksize], order.Uint64(buf[e+8:])})
		}
		for i, c := range children {
			first, err := w.bucketTree(c.id, root)
			if err != nil {
				return nil, err
			}
			if !bytes.Equal(first, c.key) {
				return nil, fmt.Errorf("page %d: key %d is not the first key of its child, page %d", id, i, c.id)
			}
		}
		return bytes.Clone(children[0].key), nil
	case flags == leafPage:
		w.leaves++
		type sub struct {
			root   uint64
			inline []byte
		}
		var subs []sub
		var first []byte
		for i := range count {
			e := pageHeaderSize + i*elementSize
			f := order.Uint32(buf[e:])
			pos, ksize, vsize := uint64(order.Uint32(buf[e+4:])), uint64(order.Uint32(buf[e+8:])), uint64(order.Uint32(buf[e+12:]))
			start := uint64(e) + pos
			end := start + ksize + vsize
			if end > uint64(len(buf)) {
				return nil, fmt.Errorf("page %d: element %d runs past the page", id, i)
			}
			if ksize == 0 {
				return nil, fmt.Errorf("page %d: key %d is empty", id, i)
			}
			if i == 0 {
				first = buf[start : start+ksize]
			}
			if f&bucketLeaf == 0 {
				if root {
					return nil, fmt.Errorf("page %d: the root bucket holds a value, not a bucket", id)
				}
				continue
			}
			v := buf[end-vsize : end]
			if len(v) < bucketHeaderSize {
				return nil, fmt.Errorf("page %d: bucket %d: a header of %d bytes", id, i, len(v))
			}
			s := sub{root: order.Uint64(v)}
			if s.root == 0 {
				s.inline = v[bucketHeaderSize:]
			}
			subs = append(subs, s)
		}
		for _, s := range subs {
			var err error
			if s.root == 0 {
				_, err = w.node(0, s.inline, false)
			} else {
				_, err = w.bucketTree(s.root, false)
			}
			if err != nil {
				return nil, err
			}
		}
		return bytes.Clone(first), nil
	default:
		return nil, fmt.Errorf("page %d: flags %#x, neither a branch nor a leaf", id, flags)
	}
}
