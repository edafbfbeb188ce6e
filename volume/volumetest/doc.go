// Package volumetest has fakes for the volume block's interfaces: Mounter,
// which records mounts without mounting, and Tokens, a TokenSource that
// issues numbered tokens. Both are safe for concurrent use. For configMaps
// and secrets use volume.StaticSources.
package volumetest
