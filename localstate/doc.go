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
// changes nothing), creates the file 0600 in a 0700 directory, and never
// logs a value. Memory is the same contract in memory, for tests.
//
// State puts Kubernetes' types over a Store, encoded as protobuf: SetPods
// replaces the kept pods in one write of what changed, PutConfigMap,
// PutSecret and PutToken keep what the API server served, PutPodStatus and
// DeletePodStatus track the statuses not yet acknowledged. A write of an
// object already kept at the same resourceVersion is skipped without
// touching the disk, so the adapters can write through on every read.
//
// # Damage, links and secrets
//
// The file is a cache the API server refills, so no damage to it may stop
// a node: OpenBolt checks an existing file before bbolt writes to it (the
// bounds of every page, a read of every value, bbolt's consistency check,
// in a goroutine where a fault is a recoverable panic), moves a file that
// fails aside (path.corrupt-<UTC time>, never deleted), logs it as an
// error and starts empty; Bolt.Recovered tells the caller, who records an
// event (examples/apiserver's Joined.Run does). A lock held by another
// process, a file it may not read and a newer schema are refused, not
// moved. The path is opened without following a symbolic link (refused,
// ErrInvalidArgument), so a link never makes the agent write the file it
// points to. The values of Secrets and Tokens are sealed with
// BoltOptions.SecretKey (AES-256-GCM; ReadSecretKeyFile reads one), or,
// without a key, not kept at all: a node keeps secrets off its disk, as
// Kubernetes promises, unless the operator gives a key. A value that
// does not open with the key is absent, and logged once.
// docs/localstate.md has the cases, their outcomes and the costs.
//
// # Driving it
//
//	key, err := localstate.ReadSecretKeyFile("/run/credentials/minikubelet/localstate.key")
//	store, err := localstate.OpenBolt("/var/lib/minikubelet/localstate.db", localstate.BoltOptions{SecretKey: key, Logger: log})
//	if err != nil { ... }          // held by another process, a newer schema, a symbolic link ...
//	if rec, ok := store.Recovered(); ok { ... } // damaged: moved aside, or read from its other meta page
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
// transaction is on disk. OpenBolt runs its checks in goroutines that end
// before it returns; nothing else starts one.
package localstate
