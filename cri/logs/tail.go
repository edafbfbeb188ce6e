package logs

import (
	"bytes"
	"io"
)

// tailBlockSize is the first block read backwards from the end of a file
// to find where its last lines start; each further block is twice the size
// of the one before, so the bytes copied stay proportional to the bytes
// read.
const tailBlockSize = 16 << 10

// tailStart returns the offset in the file (size bytes of r) where its
// last n lines start: the offset just after the (n+1)th last entry that
// ends a line (an F entry, see Format.endsLine), or 0 when the file has no
// more than n lines. A line split into partial entries counts once. What
// follows the last entry that ends a line (partial entries of a line still
// being written, an unterminated last line) is not counted. n < 0 means the
// whole file. The cost depends on the size of the last lines, not of the
// file.
//
// The format is detected from the last complete line, as upstream detects
// it from the first line it reads.
func tailStart(r io.ReaderAt, size, n int64) (int64, error) {
	if n < 0 || size == 0 {
		return 0, nil
	}
	var (
		buf    []byte // the file's bytes from left to size
		left   = size
		block  = int64(tailBlockSize)
		lineTo = -1 // index in buf after the newline that ends the line being looked for; -1: none found yet
		ends   int64
		format Format
	)
	for left > 0 {
		k := min(block, left)
		left -= k
		block *= 2
		grown := make([]byte, int(k)+len(buf))
		if _, err := r.ReadAt(grown[:k], left); err != nil && err != io.EOF {
			return 0, err
		}
		copy(grown[k:], buf)
		buf = grown
		if lineTo >= 0 {
			lineTo += int(k)
		}
		// Walk back over the lines whose start is now known, last first.
		for {
			if lineTo < 0 {
				nl := bytes.LastIndexByte(buf, '\n')
				if nl < 0 {
					break // no complete line yet
				}
				lineTo = nl + 1
			}
			nl := bytes.LastIndexByte(buf[:lineTo-1], '\n')
			if nl < 0 && left > 0 {
				break // the line starts in a block not read yet
			}
			line := buf[nl+1 : lineTo-1]
			if format == 0 {
				f, err := DetectFormat(line)
				if err != nil {
					f = FormatCRI // malformed: each line counts once
				}
				format = f
			}
			if format.endsLine(line) {
				ends++
				if ends == n+1 {
					return left + int64(lineTo), nil
				}
			}
			if nl < 0 {
				return 0, nil
			}
			lineTo = nl + 1
		}
	}
	return 0, nil
}
