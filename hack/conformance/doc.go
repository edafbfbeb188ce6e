// Command conformance reads the ginkgo JSON report of upstream's node
// conformance suite (k8s.io/kubernetes/test/e2e_node, run by
// hack/conformance.sh) and turns it into what the project records and
// checks:
//
//	conformance summarize --report report.json --out DIR [--pass-list FILE]
//	conformance compare --upstream DIR --minikubelet DIR [--markdown]
//	conformance focus FILE
//	conformance passed --report report.json [--areas FILE]
//
// summarize writes DIR/passed.txt and DIR/failed.txt (one spec a line, by its
// full text; failed.txt adds the first line of each failure, indented) and
// DIR/summary.txt (per area: passed, failed, skipped, total). With
// --pass-list (a recorded passed.txt), it exits 1 when a spec of the list
// did not pass in this run, a regression, and names it; a spec that passed
// and is not in the list is reported as new, which is not an error.
//
// compare reads the passed.txt, failed.txt and summary of two runs of the
// same suite, upstream kubelet's and minikubelet's, and prints per area how
// many specs each passed, of how many that ran, then every spec upstream
// passed and minikubelet did not. With --markdown it prints the table for
// docs/conformance.md.
//
// focus prints a ginkgo focus regexp that selects exactly the specs of a
// pass list, so that a run checks the recorded specs and waits on no spec
// known to fail.
//
// passed prints the specs of a run that passed, one a line, limited to the
// areas the file names (one a line, as summary.txt writes them): how a pass
// list such as hack/conformance/curated.passed is recorded.
//
// An area is the spec's outermost ginkgo container ("Probing container",
// "Downward API volume", ...), without its [sig-...] prefix.
package main
