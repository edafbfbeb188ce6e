// Package podres sums a pod's container resources as upstream's kubelet
// does (k8s.io/component-helpers' resource helpers): the regular
// containers and the restartable init containers (sidecars) together, or,
// resource by resource, the largest need of an init container when that is
// more. Package admission sums requests with it, package cgroups limits.
package podres
