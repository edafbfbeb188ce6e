// Command conformance reads the ginkgo JSON reports of upstream's node
// conformance suite (k8s.io/kubernetes/test/e2e_node, run by
// hack/conformance.sh) and of its cluster suite (k8s.io/kubernetes/test/e2e,
// run by hack/cluster-conformance.sh) and turns them into what the project
// records and checks:
//
//	conformance summarize --report report.json --out DIR [--pass-list FILE]
//	conformance compare --upstream DIR --minikubelet DIR [--markdown]
//	conformance compare --run NAME=DIR[,DIR...] --run NAME=DIR... [--markdown]
//	conformance focus FILE
//	conformance passed --report report.json [--areas FILE] [--max-runtime DUR] [--per-area N]
//
// summarize writes DIR/passed.txt and DIR/failed.txt (one spec a line, by its
// full text; failed.txt adds the first line of each failure, indented) and
// DIR/summary.txt (per area: passed, failed, skipped, total). With
// --pass-list (a recorded passed.txt), it exits 1 when a spec of the list
// did not pass in this run, a regression, and names it; a spec that passed
// and is not in the list is reported as new, which is not an error.
//
// compare reads the reports (DIR/report.json) of two runs or more of the
// same suite, upstream kubelet's and minikubelet's (--upstream and
// --minikubelet), or any named runs (--run, repeated; the first is the
// reference), and prints per area how many specs each passed, of how many
// ran under any of them, then, for each run after the first, every spec the
// first passed and it did not. A run given several dirs (a parallel and a
// serial part, as hack/cluster-conformance.sh writes them) counts their
// specs together. With --markdown it prints the tables of
// docs/conformance.md and docs/conformance-cluster.md.
//
// focus prints a ginkgo focus regexp that selects exactly the specs of a
// pass list, so that a run checks the recorded specs and waits on no spec
// known to fail.
//
// passed prints the specs of a run that passed, one a line, limited to the
// areas the file names (one a line, as summary.txt writes them) and, with
// --max-runtime, to the specs that took no longer: how a pass list such as
// hack/conformance/curated.passed is recorded. --per-area N keeps the N
// fastest of each area (ties by name); a line "AREA | N" of the areas file
// caps that area alone, "AREA | all" keeps all of it: how the cluster
// suite's list samples every area and keeps a CI run short.
//
// summarize and passed take several reports, comma-separated, as the parts
// of one run.
//
// An area is the spec's outermost ginkgo container ("Probing container",
// "Downward API volume", ...), without its [sig-...] prefix.
package main
