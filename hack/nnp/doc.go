// Command nnp prints the effective user ID it runs with, as
// "Effective uid: N". hack/containerd-setup.sh installs it setuid-root in
// the docker.io/local/nonewprivs:1 test image, a stand-in for critest's
// registry.k8s.io/e2e-test-images/nonewprivs image: started as a non-root
// user it reports uid 0 unless the container has no_new_privs set.
// Standard library only; build with CGO_ENABLED=0.
//
// hack/containerd-setup.sh builds main.go alone, copied into a private
// module, so the program's code must stay in main.go; this file holds only
// the package comment.
package main
