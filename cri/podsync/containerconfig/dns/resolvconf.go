package dns

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// DefaultResolvConf is the host's resolver configuration upstream's kubelet
// reads by default (its --resolv-conf).
const DefaultResolvConf = "/etc/resolv.conf"

// MaxResolvConfSize is the largest resolver configuration ParseResolvConf
// reads, as upstream's: 10 MiB.
const MaxResolvConfSize = 10 << 20

// ErrResolvConfTooLarge is wrapped by ParseResolvConf's error for a file
// larger than MaxResolvConfSize.
var ErrResolvConfTooLarge = errors.New("resolv.conf is larger than 10MiB")

// ResolvConf is what a pod's resolver configuration takes from the host's:
// its nameservers, search paths and options.
type ResolvConf struct {
	// Nameservers are the address of every nameserver line, in order.
	Nameservers []string
	// Searches are the domains of the last search line, each without its
	// trailing dot; a domain that is only "." is left out.
	Searches []string
	// Options are the options of every options line, once each by name
	// (the part before ':'): a later one replaces an earlier one in its
	// place.
	Options []string
}

// ParseResolvConf reads a resolv.conf as upstream's kubelet does. Lines are
// split into fields at white space; a line whose first field starts with
// '#' is a comment, and so is the rest of a nameserver line after its
// address. "nameserver ADDR" lines accumulate; the last "search" line wins;
// "options" lines merge, a later option replacing an earlier one of the
// same name. Other lines ("domain", "sortlist", ...) are ignored. A
// nameserver line without an address is an error, reported after the rest
// of the file has been read, with what was read; so is a file larger than
// MaxResolvConfSize (ErrResolvConfTooLarge), with nothing read.
func ParseResolvConf(r io.Reader) (ResolvConf, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxResolvConfSize+1))
	if err != nil {
		return ResolvConf{}, err
	}
	if len(b) > MaxResolvConfSize {
		return ResolvConf{}, ErrResolvConfTooLarge
	}
	var conf ResolvConf
	var errs []error
	optionAt := map[string]int{}
	for line := range strings.SplitSeq(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		switch fields[0] {
		case "nameserver":
			if len(fields) < 2 {
				errs = append(errs, errors.New("nameserver list is empty"))
				continue
			}
			conf.Nameservers = append(conf.Nameservers, fields[1])
		case "search":
			conf.Searches = conf.Searches[:0]
			for _, s := range fields[1:] {
				if s != "." {
					conf.Searches = append(conf.Searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			conf.Options = addOptions(conf.Options, optionAt, fields[1:])
		}
	}
	return conf, errors.Join(errs...)
}

// ReadResolvConf opens the file at path and parses it (ParseResolvConf).
func ReadResolvConf(path string) (ResolvConf, error) {
	f, err := os.Open(path)
	if err != nil {
		return ResolvConf{}, err
	}
	defer f.Close()
	conf, err := ParseResolvConf(f)
	if err != nil {
		return conf, fmt.Errorf("parse %s: %w", path, err)
	}
	return conf, nil
}

// optionName is the name of a resolver option: what comes before ':'.
func optionName(o string) string {
	name, _, _ := strings.Cut(o, ":")
	return name
}

// mergeOptions returns options with each of more added: one of a name
// already there takes its place, a new name goes at the end. options is not
// changed.
func mergeOptions(options, more []string) []string {
	at := make(map[string]int, len(options)+len(more))
	for i, o := range options {
		at[optionName(o)] = i
	}
	return addOptions(slices.Clone(options), at, more)
}

// addOptions adds each of more to options as mergeOptions does, in place,
// with at the index in options of each name already there (kept up to
// date). It takes time linear in len(more), however many options there
// are: a resolv.conf may hold millions of them.
func addOptions(options []string, at map[string]int, more []string) []string {
	for _, o := range more {
		name := optionName(o)
		if i, ok := at[name]; ok {
			options[i] = o
			continue
		}
		at[name] = len(options)
		options = append(options, o)
	}
	return options
}
