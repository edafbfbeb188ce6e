// Command metrics-compare compares the Prometheus expositions a kubelet
// serves with those upstream kubelet serves for the same pods in the same
// harness (hack/kubectl-e2e.sh scrapes both through the API server's node
// proxy), family by family: every metric family upstream serves is looked
// up in ours, and its type, label names, histogram buckets and help text are
// compared; our expositions are also linted as `promtool check metrics` does
// (client_golang's promlint, which promtool runs).
//
//	metrics-compare [-required required.txt] [-known known.txt] [-report report.md] UPSTREAM_DIR OURS_DIR
//
// Each directory holds one scrape per endpoint, named after it: metrics.txt
// (/metrics), metrics-resource.txt, metrics-probes.txt, metrics-cadvisor.txt.
// Every file of UPSTREAM_DIR is compared with the file of the same name in
// OURS_DIR.
//
// It exits 1 when a family of the required list (the families
// kube-prometheus' kubelet dashboards and alerts read, required.txt) is
// served by upstream and not by us, when a family we serve under an
// upstream name has another type, other label names or other buckets, or
// when the lint finds a problem in ours that upstream's same family does
// not have. Help texts that differ, and families upstream serves that are
// not required, are reported without failing. Families on the known list
// (known.txt, the differences recorded when the comparison was last
// reviewed, as the conformance stages record their pass lists) are
// reported as known and do not fail; those of them that no longer differ
// are named, to be taken off the list. The report is Markdown: a
// summary line, then a table per endpoint.
package main
