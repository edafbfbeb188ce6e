package logs_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubeletkit/kubeletkit/cri/logs"
)

// tailReference finds where the last n lines start by reading forward:
// after the (n+1)th last terminated entry that ends a line.
func tailReference(data []byte, n int64) int64 {
	var ends []int64
	off := 0
	format := logs.Format(0)
	for {
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			break
		}
		line := data[off : off+i]
		off += i + 1
		if format == 0 {
			var err error
			if format, err = logs.DetectFormat(line); err != nil {
				format = logs.FormatCRI
			}
		}
		var e logs.Entry
		if format.Parse(line, &e) != nil || !e.Partial {
			ends = append(ends, int64(off))
		}
	}
	if n < 0 || int64(len(ends)) <= n {
		return 0
	}
	return ends[int64(len(ends))-1-n]
}

// randomLog writes lines of random lengths (some longer than the blocks
// tailStart reads), partial entries, malformed lines and maybe an
// unterminated end.
func randomLog(r *rand.Rand, lines int) []byte {
	var b strings.Builder
	for i := range lines {
		switch k := r.IntN(20); {
		case k == 0:
			b.WriteString("garbage line\n")
		case k < 4:
			fmt.Fprintf(&b, "2024-01-01T00:00:%02dZ stdout P %s\n", i%60, strings.Repeat("p", r.IntN(3000)))
		default:
			stream := "stdout"
			if k%3 == 0 {
				stream = "stderr"
			}
			size := r.IntN(200)
			if k == 19 {
				size = 20000 + r.IntN(10000)
			}
			fmt.Fprintf(&b, "2024-01-01T00:00:%02d.%dZ %s F %s\n", i%60, i, stream, strings.Repeat("x", size))
		}
	}
	if r.IntN(2) == 0 {
		b.WriteString("2024-01-01T00:00:00Z stdout F unterminated")
	}
	return []byte(b.String())
}

func TestTailStartAgreesWithForwardReading(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 40 {
		data := randomLog(r, 1+r.IntN(400))
		for _, n := range []int64{-1, 0, 1, 2, 3, 7, 50, 100, 399, 1000} {
			got, err := logs.TailStart(bytes.NewReader(data), int64(len(data)), n)
			require.NoError(t, err)
			require.Equal(t, tailReference(data, n), got, "trial %d (%d bytes), tail %d", trial, len(data), n)
		}
	}
}

func TestTailStartEdges(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		n    int64
		want int64
	}{
		{name: "empty", data: "", n: 1, want: 0},
		{name: "no newline", data: "2024-01-01T00:00:00Z stdout F x", n: 0, want: 0},
		{name: "one line, tail 0", data: "2024-01-01T00:00:00Z stdout F x\n", n: 0, want: 32},
		{name: "one line, tail 1", data: "2024-01-01T00:00:00Z stdout F x\n", n: 1, want: 0},
		{name: "only partial entries", data: "2024-01-01T00:00:00Z stdout P x\n2024-01-01T00:00:00Z stdout P y\n", n: 0, want: 0},
		{name: "json", data: `{"log":"a\n","stream":"stdout","time":"2024-01-01T00:00:00Z"}` + "\n" +
			`{"log":"b","stream":"stdout","time":"2024-01-01T00:00:00Z"}` + "\n" +
			`{"log":"c\n","stream":"stdout","time":"2024-01-01T00:00:00Z"}` + "\n", n: 1, want: 62},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := logs.TailStart(strings.NewReader(tc.data), int64(len(tc.data)), tc.n)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, tailReference([]byte(tc.data), tc.n), got)
		})
	}
}
