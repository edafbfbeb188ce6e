package dns_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"

	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig/dns"
)

// TestParseResolvConf holds upstream's cases of parseResolvConf, with those
// of its later fixes: trailing dots trimmed, "search ." left out, options
// lines merged.
func TestParseResolvConf(t *testing.T) {
	for name, tc := range map[string]struct {
		data    string
		want    dns.ResolvConf
		wantErr bool
	}{
		"empty":                      {data: ""},
		"a space":                    {data: " "},
		"a new line":                 {data: "\n"},
		"tabs":                       {data: "\t\n\t"},
		"a comment":                  {data: "#comment\n"},
		"an indented comment":        {data: " #comment\n"},
		"two comments":               {data: "#comment\n#comment"},
		"an empty nameserver":        {data: "#comment\nnameserver", wantErr: true},
		"empty nameserver and searc": {data: "#comment\nnameserver\nsearch", wantErr: true},
		"a nameserver, empty search": {data: "#comment\nnameserver 1.2.3.4\nsearch", want: dns.ResolvConf{Nameservers: []string{"1.2.3.4"}}},
		"a nameserver":               {data: "nameserver 1.2.3.4", want: dns.ResolvConf{Nameservers: []string{"1.2.3.4"}}},
		"indented":                   {data: " nameserver 1.2.3.4", want: dns.ResolvConf{Nameservers: []string{"1.2.3.4"}}},
		"tab indented":               {data: "\tnameserver 1.2.3.4", want: dns.ResolvConf{Nameservers: []string{"1.2.3.4"}}},
		"tab separated":              {data: "nameserver\t1.2.3.4", want: dns.ResolvConf{Nameservers: []string{"1.2.3.4"}}},
		"spaces and tab":             {data: "nameserver \t 1.2.3.4", want: dns.ResolvConf{Nameservers: []string{"1.2.3.4"}}},
		"CRLF":                       {data: "nameserver 1.2.3.4\r\nsearch foo\r\n", want: dns.ResolvConf{Nameservers: []string{"1.2.3.4"}, Searches: []string{"foo"}}},
		"nameservers accumulate":     {data: "nameserver 1.2.3.4\nnameserver 5.6.7.8", want: dns.ResolvConf{Nameservers: []string{"1.2.3.4", "5.6.7.8"}}},
		"a trailing comment":         {data: "nameserver 1.2.3.4 #comment", want: dns.ResolvConf{Nameservers: []string{"1.2.3.4"}}},
		"search empty":               {data: "search "},
		"one search":                 {data: "search foo", want: dns.ResolvConf{Searches: []string{"foo"}}},
		"two searches":               {data: "search foo bar", want: dns.ResolvConf{Searches: []string{"foo", "bar"}}},
		"three searches":             {data: "search foo bar bat\n", want: dns.ResolvConf{Searches: []string{"foo", "bar", "bat"}}},
		"the last search line wins":  {data: "search foo\nsearch bar", want: dns.ResolvConf{Searches: []string{"bar"}}},
		"an empty search line wins":  {data: "search foo\nsearch", want: dns.ResolvConf{Searches: []string{}}},
		"trailing dots trimmed":      {data: "search foo. bar", want: dns.ResolvConf{Searches: []string{"foo", "bar"}}},
		"the root left out":          {data: "search .", want: dns.ResolvConf{Searches: []string{}}},
		"the root among others":      {data: "search foo . bar.", want: dns.ResolvConf{Searches: []string{"foo", "bar"}}},
		"nameserver and search":      {data: "nameserver 1.2.3.4\nsearch foo bar", want: dns.ResolvConf{Nameservers: []string{"1.2.3.4"}, Searches: []string{"foo", "bar"}}},
		"interleaved": {data: "nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar",
			want: dns.ResolvConf{Nameservers: []string{"1.2.3.4", "5.6.7.8"}, Searches: []string{"bar"}}},
		"comments between": {data: "#comment\nnameserver 1.2.3.4\n#comment\nsearch foo\ncomment",
			want: dns.ResolvConf{Nameservers: []string{"1.2.3.4"}, Searches: []string{"foo"}}},
		"options empty":           {data: "options "},
		"options":                 {data: "options ndots:5 attempts:2", want: dns.ResolvConf{Options: []string{"ndots:5", "attempts:2"}}},
		"a later option replaces": {data: "options ndots:1\noptions ndots:5 attempts:3", want: dns.ResolvConf{Options: []string{"ndots:5", "attempts:3"}}},
		"options lines merge":     {data: "options timeout:1\noptions attempts:3\noptions rotate", want: dns.ResolvConf{Options: []string{"timeout:1", "attempts:3", "rotate"}}},
		"within a line":           {data: "options ndots:1 ndots:2", want: dns.ResolvConf{Options: []string{"ndots:2"}}},
		"everything": {data: "nameserver 1.2.3.4\nsearch foo\nnameserver 5.6.7.8\nsearch bar\noptions ndots:5 attempts:4\ndomain example.org\nsortlist 130.155.160.0",
			want: dns.ResolvConf{Nameservers: []string{"1.2.3.4", "5.6.7.8"}, Searches: []string{"bar"}, Options: []string{"ndots:5", "attempts:4"}}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := dns.ParseResolvConf(strings.NewReader(tc.data))
			if tc.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, orNil(tc.want.Nameservers), orNil(got.Nameservers), "nameservers")
			assert.Equal(t, orNil(tc.want.Searches), orNil(got.Searches), "searches")
			assert.Equal(t, orNil(tc.want.Options), orNil(got.Options), "options")
		})
	}
}

// orNil is s, or nil when s is empty.
func orNil(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// A nameserver line without an address is an error, and the rest of the
// file is still read.
func TestParseResolvConfErrorKeepsTheRest(t *testing.T) {
	got, err := dns.ParseResolvConf(strings.NewReader("nameserver\nnameserver 10.0.0.1\nsearch a"))
	require.Error(t, err)
	assert.Equal(t, []string{"10.0.0.1"}, got.Nameservers)
	assert.Equal(t, []string{"a"}, got.Searches)
}

// TestParseResolvConfLargestFile parses a resolv.conf of nearly
// MaxResolvConfSize with a distinct option in every field, one line of
// them and many, and a search line as long, and forms a pod's
// configuration from it: every part takes time linear in the file (the
// fuzzer once stalled on options merged in quadratic time, which would
// stall every sandbox of a node whose host file is that large).
func TestParseResolvConfLargestFile(t *testing.T) {
	var b strings.Builder
	b.WriteString("options")
	n := 0
	for b.Len() < dns.MaxResolvConfSize/3 {
		fmt.Fprintf(&b, " o%d:1", n)
		n++
	}
	b.WriteString("\nsearch")
	searches := 0
	for b.Len() < 2*dns.MaxResolvConfSize/3 {
		fmt.Fprintf(&b, " s%d.example", searches)
		searches++
	}
	b.WriteString("\n")
	lines := 0
	for b.Len() < dns.MaxResolvConfSize-32 {
		fmt.Fprintf(&b, "options o%d:2 p%d\n", lines, lines)
		lines++
	}
	got, err := dns.ParseResolvConf(strings.NewReader(b.String()))
	require.NoError(t, err)
	require.Len(t, got.Options, n+lines)
	assert.Equal(t, "o0:2", got.Options[0], "a later option takes an earlier one's place")
	assert.Equal(t, fmt.Sprintf("p%d", lines-1), got.Options[len(got.Options)-1])
	require.Len(t, got.Searches, searches)

	r := dns.ForPod(dns.Input{Pod: &v1.Pod{Spec: v1.PodSpec{DNSPolicy: v1.DNSDefault}}, Host: &got})
	assert.Len(t, r.Config.GetSearches(), 32, "the searches cut to upstream's limit")
}

func TestParseResolvConfTooLarge(t *testing.T) {
	_, err := dns.ParseResolvConf(strings.NewReader(strings.Repeat("#", dns.MaxResolvConfSize+1)))
	require.ErrorIs(t, err, dns.ErrResolvConfTooLarge)
	_, err = dns.ParseResolvConf(strings.NewReader(strings.Repeat("#", dns.MaxResolvConfSize)))
	require.NoError(t, err)
}

func TestReadResolvConf(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resolv.conf")
	require.NoError(t, os.WriteFile(path, []byte("nameserver 10.0.0.1\nsearch a.example.\n"), 0o644))
	got, err := dns.ReadResolvConf(path)
	require.NoError(t, err)
	assert.Equal(t, dns.ResolvConf{Nameservers: []string{"10.0.0.1"}, Searches: []string{"a.example"}}, got)

	_, err = dns.ReadResolvConf(filepath.Join(t.TempDir(), "missing"))
	require.ErrorIs(t, err, os.ErrNotExist)

	require.NoError(t, os.WriteFile(path, []byte("nameserver\n"), 0o644))
	_, err = dns.ReadResolvConf(path)
	require.ErrorContains(t, err, path)
}

// FuzzParseResolvConf: any input parses without panicking, and what it
// gives holds no empty nameserver or search path, no
// white space and no option name twice; its search paths cut to the limits
// fit them.
func FuzzParseResolvConf(f *testing.F) {
	for _, s := range []string{
		"", "nameserver 1.2.3.4\nsearch foo. bar\noptions ndots:5 attempts:2\n", "search .\n", "nameserver\n",
		"options a:1\noptions a:2 b\n", "#c\n  nameserver ::1 # x\r\nsearch a\tb\n", "options :\nsearch ..\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		got, _ := dns.ParseResolvConf(strings.NewReader(data))
		names := map[string]bool{}
		for _, o := range got.Options {
			name, _, _ := strings.Cut(o, ":")
			if names[name] {
				t.Fatalf("option %q twice in %q", name, got.Options)
			}
			names[name] = true
		}
		for _, l := range [][]string{got.Nameservers, got.Searches, got.Options} {
			for _, s := range l {
				if strings.TrimSpace(s) != s || strings.ContainsAny(s, " \t\n\r") {
					t.Fatalf("field %q has white space", s)
				}
			}
		}
		for _, s := range got.Nameservers {
			if s == "" {
				t.Fatal("an empty nameserver")
			}
		}
		for _, s := range got.Searches {
			if s == "" {
				t.Fatalf("search path %q in %q", s, got.Searches)
			}
		}
		// What the pod gets from it fits the limits.
		fit, _ := dns.FitSearches(got.Searches)
		if len(fit) > dns.MaxSearchPaths || len(strings.Join(fit, " ")) > dns.MaxSearchListChars {
			t.Fatalf("FitSearches gave %d paths, %d characters", len(fit), len(strings.Join(fit, " ")))
		}
	})
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}
