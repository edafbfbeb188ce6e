package cri

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
)

// Labels and annotations that a kubelet puts on every sandbox and container it
// creates. They are how a kubelet (this one, or upstream's after a restart)
// finds the pod a runtime object belongs to, so they are spelled exactly as
// upstream spells them: a container runtime, crictl and existing tooling already
// know these keys.
//
// The identity keys are labels, so that ListPodSandbox and ListContainers can
// filter on them; everything else is an annotation.
const (
	// PodUIDLabel holds the UID of the pod that owns a sandbox or container.
	PodUIDLabel = "io.kubernetes.pod.uid"
	// PodNameLabel holds the pod's name.
	PodNameLabel = "io.kubernetes.pod.name"
	// PodNamespaceLabel holds the pod's namespace.
	PodNamespaceLabel = "io.kubernetes.pod.namespace"
	// ContainerNameLabel holds the name of the container in the pod spec.
	ContainerNameLabel = "io.kubernetes.container.name"

	// ContainerHashAnnotation holds the hash of the container's spec, in
	// lower-case hexadecimal; a different hash means the spec changed and the
	// container must be restarted.
	ContainerHashAnnotation = "io.kubernetes.container.hash"
	// ContainerRestartCountAnnotation holds how many times the container had
	// restarted when this instance was created, in decimal.
	ContainerRestartCountAnnotation = "io.kubernetes.container.restartCount"
	// ContainerTerminationMessagePathAnnotation holds the container's
	// terminationMessagePath.
	ContainerTerminationMessagePathAnnotation = "io.kubernetes.container.terminationMessagePath"
	// ContainerTerminationMessagePolicyAnnotation holds the container's
	// terminationMessagePolicy.
	ContainerTerminationMessagePolicyAnnotation = "io.kubernetes.container.terminationMessagePolicy"
	// ContainerPreStopHandlerAnnotation holds the container's preStop handler
	// as JSON, so that a kill after a kubelet restart can still run it.
	ContainerPreStopHandlerAnnotation = "io.kubernetes.container.preStopHandler"
	// ContainerPortsAnnotation holds the container's ports as JSON.
	ContainerPortsAnnotation = "io.kubernetes.container.ports"
	// ContainerTypeAnnotation says which list of the pod spec the container
	// comes from: ContainerTypeInit, ContainerTypeRegular or
	// ContainerTypeEphemeral.
	ContainerTypeAnnotation = "io.kubernetes.container.type"
	// PodDeletionGracePeriodAnnotation holds the pod's
	// deletionGracePeriodSeconds when it was set at container creation.
	PodDeletionGracePeriodAnnotation = "io.kubernetes.pod.deletionGracePeriod"
	// PodTerminationGracePeriodAnnotation holds the pod's
	// terminationGracePeriodSeconds.
	PodTerminationGracePeriodAnnotation = "io.kubernetes.pod.terminationGracePeriod"
)

// Values of ContainerTypeAnnotation.
const (
	// ContainerTypeInit marks an init container (including a restartable
	// init container, a sidecar).
	ContainerTypeInit = "init"
	// ContainerTypeRegular marks a container of spec.containers.
	ContainerTypeRegular = "container"
	// ContainerTypeEphemeral marks an ephemeral (debug) container.
	ContainerTypeEphemeral = "ephemeral"
)

// PodLabels returns the identity labels of a pod's sandbox: its UID, name and
// namespace. Callers add the pod's own labels to the map.
func PodLabels(uid types.UID, name, namespace string) map[string]string {
	return map[string]string{
		PodUIDLabel:       string(uid),
		PodNameLabel:      name,
		PodNamespaceLabel: namespace,
	}
}

// ContainerLabels returns the identity labels of a container: its pod's UID,
// name and namespace, and its own name.
func ContainerLabels(uid types.UID, podName, podNamespace, containerName string) map[string]string {
	l := PodLabels(uid, podName, podNamespace)
	l[ContainerNameLabel] = containerName
	return l
}

// PodUIDFromLabels returns the pod UID recorded in a sandbox's or container's
// labels, or "" when there is none (an object not created by a kubelet).
func PodUIDFromLabels(labels map[string]string) types.UID {
	return types.UID(labels[PodUIDLabel])
}

// RestartCountFromAnnotations returns the restart count recorded on a
// container. A missing annotation counts as 0, as upstream treats containers
// created before it existed; a malformed one is an error (and 0).
func RestartCountFromAnnotations(annotations map[string]string) (int, error) {
	v, ok := annotations[ContainerRestartCountAnnotation]
	if !ok {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("annotation %s: %w", ContainerRestartCountAnnotation, err)
	}
	return n, nil
}

// HashFromAnnotations returns the spec hash recorded on a container and
// whether there was one. A malformed hash is an error.
func HashFromAnnotations(annotations map[string]string) (uint64, bool, error) {
	v, ok := annotations[ContainerHashAnnotation]
	if !ok {
		return 0, false, nil
	}
	h, err := strconv.ParseUint(v, 16, 64)
	if err != nil {
		return 0, false, fmt.Errorf("annotation %s: %w", ContainerHashAnnotation, err)
	}
	return h, true, nil
}
