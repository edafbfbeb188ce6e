// Package pullrecords keeps a node's records of which credentials pulled
// which image, so that a pod may not use an image another pod pulled with
// its own secret unless it shows credentials for it: upstream kubelet's
// image pull manager, its KubeletEnsureSecretPulledImages feature (beta
// and on by default since 1.35), with its configuration fields
// imagePullCredentialsVerificationPolicy (Policy) and
// preloadedImagesVerificationAllowlist (Allowlist).
//
// Without it, a pod whose image is present and whose pull policy is
// IfNotPresent (or Never) runs it whatever its credentials. With it, the
// puller asks MustPull first: when the pod must show its credentials, an
// IfNotPresent pod's image is pulled again with the pod's credentials (the
// registry checks them; the image's layers are not downloaded again), and
// a Never pod fails with ErrImageNeverPull and upstream's message
// "Container image … is not present with pull policy of Never", which
// does not reveal that the image is there.
//
// The decision is Decide, a pure function of an Input: the policy, the
// image's record, whether the node began to pull it, and the pod's
// credentials for it:
//
//   - NeverVerify: never a pull.
//   - NeverVerifyPreloadedImages (the default): an image the node did not
//     pull itself (there before it kept records, or pulled by something
//     else) needs no credentials; one it pulled needs credentials that
//     pulled it.
//   - NeverVerifyAllowlistedImages: only the images of the allowlist
//     ("registry.example/team/app", or "registry.example/team/*") need no
//     credentials, however they came.
//   - AlwaysVerify: every image needs credentials that pulled it.
//
// Credentials that pulled it: the record of the image (by the runtime's
// reference, its ID) maps the image's name as the pod wrote it, without
// tag or digest, to those that pulled it under that name. The node's own
// credentials (a credential provider plugin's that needs no service
// account), or none, let every pod (NodePodsAccessible); else a pod
// matches with one of its pull secrets whose entry for the image has the
// same credentials (their hash: another secret with the same content
// matches, and is added to the record), or that is the recorded secret
// itself (namespace, name and UID: a secret whose content changed since
// still matches, and its new hash is recorded), or with its service
// account when a plugin was given a token of it. A record, or an intent,
// that cannot be read means a pull, whatever the policy.
//
// Manager drives it: the puller calls RecordIntent before a pull and
// RecordPulled (with CredentialsOf the credentials that worked) or
// RecordFailed after it, and MustPull for an image that is present, with a
// function that looks the pod's credentials up (PodCredentialsOf the
// credentials a pull would try), called only when they matter. Image
// garbage collection calls Prune with the images left. cri/podsync's
// Syncer does all this when its Options.PullRecords is set; the agent sets
// it unless Node.PulledImages.Off.
//
// The records are files (Store), in upstream's layout and format, so that
// a node moved between upstream's kubelet and kubeletkit keeps them: under
// <root-dir>/image_manager, pulling/ holds an intent per image being
// pulled and pulled/ a record per image reference, each named "sha256-"
// and the hex SHA-256 of its key, each an ImagePullIntent or
// ImagePulledRecord of kubelet.config.k8s.io/v1beta1 (v1alpha1 read too)
// in JSON. Directories are 0700 and files 0600, each written to a
// temporary file, synced and renamed over the old one, so that a crash
// leaves the old content or the new; they hold a secret's namespace, name,
// UID and the SHA-256 of its entry, never credentials, and nothing here
// logs credentials. An intent left by a crash is turned into a record with
// no credentials at the next Open when the runtime has the image.
//
// Differences from upstream: one mutex orders the store instead of
// striped locks, and there is no in-memory cache of records (each
// decision reads one small file); Prune is given every image the runtime
// still has (upstream's garbage collector passes only the unused images it
// kept, so that it also forgets the records of images in use).
package pullrecords
