package hoststats

import (
	"math"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParsePressure(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    Pressure
		wantErr string
	}{
		{name: "memory", in: "some avg10=1.53 avg60=0.87 avg300=0.22 total=5230185\nfull avg10=0.91 avg60=0.44 avg300=0.10 total=2712338\n",
			want: Pressure{Some: PressureData{Avg10: 1.53, Avg60: 0.87, Avg300: 0.22, Total: 5230185},
				Full: PressureData{Avg10: 0.91, Avg60: 0.44, Avg300: 0.10, Total: 2712338}}},
		{name: "cpu before Linux 5.13: no full line", in: "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
			want: Pressure{}},
		{name: "no trailing newline", in: "some avg10=100.00 avg60=50.00 avg300=25.00 total=18446744073709551615",
			want: Pressure{Some: PressureData{Avg10: 100, Avg60: 50, Avg300: 25, Total: math.MaxUint64}}},
		{name: "unknown line and key skipped", in: "other x=1\nsome avg10=1.00 avg600=3 total=9\n",
			want: Pressure{Some: PressureData{Avg10: 1, Total: 9}}},
		{name: "empty", in: "", wantErr: `no "some" line`},
		{name: "full only", in: "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", wantErr: `no "some" line`},
		{name: "not key=value", in: "some avg10\n", wantErr: `"avg10" is not key=value`},
		{name: "bad total", in: "some total=-1\n", wantErr: "total: strconv.ParseUint"},
		{name: "bad average", in: "some avg10=x\n", wantErr: "avg10: strconv.ParseFloat"},
		{name: "negative average", in: "some avg60=-1\n", wantErr: `avg60: "-1" is not a share of time`},
		{name: "NaN average", in: "some avg300=NaN\n", wantErr: "is not a share of time"},
		{name: "infinite average", in: "some avg10=+Inf\n", wantErr: "is not a share of time"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePressure([]byte(tc.in))
			if tc.wantErr != "" {
				assert.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// formatPressure writes p as the kernel does, with every digit of the
// averages so that parsing it again gives p back.
func formatPressure(p Pressure) string {
	line := func(kind string, d PressureData) string {
		f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
		return kind + " avg10=" + f(d.Avg10) + " avg60=" + f(d.Avg60) + " avg300=" + f(d.Avg300) + " total=" + strconv.FormatUint(d.Total, 10) + "\n"
	}
	return line("some", p.Some) + line("full", p.Full)
}

// FuzzParsePressure: any input parses or fails without a panic; what
// parses has averages that are finite and not negative, and written back
// as the kernel writes it, parses to the same value.
func FuzzParsePressure(f *testing.F) {
	for _, seed := range []string{
		"some avg10=1.53 avg60=0.87 avg300=0.22 total=5230185\nfull avg10=0.91 avg60=0.44 avg300=0.10 total=2712338\n",
		"some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"some avg10=100.00 avg60=50.00 avg300=25.00 total=18446744073709551615",
		"full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"some avg10=NaN\n",
		"some avg10=1e308 total=1\nfull x\n",
		"",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePressure(data)
		if err != nil {
			return
		}
		for _, d := range []PressureData{p.Some, p.Full} {
			for _, v := range []float64{d.Avg10, d.Avg60, d.Avg300} {
				if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("ParsePressure(%q) gave average %v", data, v)
				}
			}
		}
		again, err := ParsePressure([]byte(formatPressure(p)))
		if err != nil {
			t.Fatalf("ParsePressure(%q) = %+v, written back does not parse: %v", data, p, err)
		}
		if again != p {
			t.Fatalf("ParsePressure(%q) = %+v, written back parses to %+v", data, p, again)
		}
	})
}
