// Package podsource answers where a pod came from, by the annotations every
// kubelet pod source sets, as upstream's kubelettypes does: static pods
// (from a manifest file or URL) and mirror pods (the API server's copies of
// static pods). syncloop, status, podworkers, eviction and cri/podsync all
// ask; syncloop and status re-export the answers for their users.
package podsource
