// Package golden replays golden transcripts, the scenario tests several
// blocks keep in testdata/*.txt: a command, its input, and the output it
// must print, case after case against one harness.
//
// A transcript is a sequence of cases separated by blank lines. A case is
// any number of comment lines (starting with #), a command line, input lines
// if the harness takes any, a "----" line, and the expected output up to the
// next blank line or the end of the file:
//
//	# the first relist sees one running container
//	relist
//	p1 container c1 running
//	----
//	p1 ContainerStarted c1
//
// Run replays testdata/*.txt; RunDir another directory's transcripts, for a
// package with a second harness (eviction's testdata/decide/). Run with
// -update to rewrite every transcript with the output the harness printed;
// comments and blank lines are kept.
package golden
