// Package localstate keeps a node's desired state on its own disk, so that
// an agent cut off from its API server, even one restarted while cut off,
// keeps running and managing its pods: the edge autonomy KubeEdge's edged
// offers with its local database.
//
// The name says what it holds: the state that is local to the node, as
// opposed to the API server's. That is the pods bound to the node as the
// API server last sent them (keyed by UID), the configMaps and secrets
// their volumes and environment read (keyed by namespace/name), the
// service account tokens issued for their projected volumes (TokenKey),
// the pod statuses the API server has not acknowledged yet (keyed by pod
// UID), and the cluster's services (keyed by namespace/name): a kubelet
// creates no container of an API pod before it has read the services,
// whose environment variables every container gets. It is not a cache the agent reads in normal operation: the
// API-server adapters write through it, and read it back only when the API
// server does not answer.
//
// # The store
//
// Store is the small interface under it: Get, List and an atomic Write of
// a Batch of puts and deletes, under a Kind. Bolt keeps it in a bbolt file
// (go.etcd.io/bbolt, etcd's own store, chosen for its crash safety: a
// copy-on-write B+tree whose every transaction is fsynced and becomes
// visible by a single meta page write, so a crash at any instant leaves the
// old or the new state, never a mix). Bolt writes the schema version
// (SchemaVersion) into the file and refuses a newer one (ErrSchema),
// bounds the bytes of keys and values it holds (BoltOptions.MaxBytes,
// DefaultMaxBytes; a write past the bound is refused with ErrTooLarge and
// changes nothing), creates the file 0600 in a 0700 directory because it
// holds secrets and tokens, and never logs a value. Memory is the same
// contract in memory, for tests.
//
// State puts Kubernetes' types over a Store, encoded as protobuf: SetPods
// replaces the kept pods in one write of what changed, PutConfigMap,
// PutSecret and PutToken keep what the API server served, PutPodStatus and
// DeletePodStatus track the statuses not yet acknowledged. A write of an
// object already kept at the same resourceVersion is skipped without
// touching the disk, so the adapters can write through on every read.
//
// # Driving it
//
//	store, err := localstate.OpenBolt("/var/lib/minikubelet/localstate.db", localstate.BoltOptions{})
//	if err != nil { ... }          // held by another process, a newer schema ...
//	defer store.Close()
//	st, err := localstate.New(store)
//	_, err = st.SetPods(pods)      // after every list or watch event
//	pods, err := st.Pods()         // at start, when the API server does not answer
//
// examples/apiserver's JoinOptions.LocalState puts a State under the pod
// source, the status sink and the volume sources; docs/localstate.md says
// what a node does with it while cut off and when it reconnects.
//
// # Threading
//
// Bolt, Memory and State are safe for concurrent use; Bolt serializes its
// writes (bbolt has one writer at a time) and a Write returns once its
// transaction is on disk. Nothing here starts a goroutine.
package localstate
