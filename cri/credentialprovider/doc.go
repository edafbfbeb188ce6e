// Package credentialprovider gives the node registry credentials from
// image credential provider plugins, as upstream kubelet's
// --image-credential-provider-config and --image-credential-provider-bin-dir
// do: executables that read a CredentialProviderRequest
// (credentialprovider.kubelet.k8s.io/v1) on stdin and write a
// CredentialProviderResponse on stdout, so that images of ECR, GCR/Artifact
// Registry, ACR or a private registry need no imagePullSecrets.
//
// LoadConfig reads and validates a CredentialProviderConfig
// (kubelet.config.k8s.io/v1) file, or a directory of them, with upstream's
// messages; New checks that every plugin is in the binary directory; Load
// does both from upstream's two flags, as upstream kubelet at start
// (neither given: no providers; one without the other: an error). Providers.Credentials is
// cri/podsync's Credentials (podsync.Options.Credentials; agent's
// Node.ImageCredentials): for an image, each provider whose matchImages
// match its repository is asked, its answer cached in memory by the
// response's cacheKeyType (Image, Registry or Global) for its
// cacheDuration (or the provider's defaultCacheDuration; zero: not
// cached), concurrent asks for one image share one run, and the
// credentials of every matching provider are returned most specific
// location first, a location two providers both answer taken from the one
// listed first. A plugin that fails, times out (one minute) or answers
// badly is logged and gives nothing: the pull goes on without it, as
// upstream's.
//
// Service account tokens for plugins (tokenAttributes, upstream's
// KubeletServiceAccountTokenForCredentialProviders, on by default since
// 1.34): Credentials takes the pod an image is pulled for; a provider with
// tokenAttributes gets, through Options.ServiceAccounts (the API server:
// examples/apiserver has one over client-go), the pod's service account
// and a token for it bound to the pod with the configured audience (kept
// until 80% of its lifetime has passed, as upstream's token manager), and is
// sent the token and the service account's annotations it names
// (serviceAccountToken, serviceAccountAnnotations). A pod without a service
// account gets nothing from it when requireServiceAccount is true, and
// runs it without a token otherwise; a required annotation missing gives
// nothing. Its answer is cached under the service account's namespace,
// name, UID and the annotations sent too, and with cacheType Token under
// the token's hash as well; a password that is the token is refused unless
// the cache type is Token. Without Options.ServiceAccounts (a standalone
// node) New refuses such a provider by name (ErrNoServiceAccounts).
//
// A Providers is safe for concurrent use. Time comes from Options.Clock.
package credentialprovider
