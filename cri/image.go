package cri

import "strings"

// NormalizeImageName spells an image name (a reference without its tag or
// digest) with its domain and path made explicit, as the container image
// libraries do: "busybox" is "docker.io/library/busybox", "someone/tool" is
// "docker.io/someone/tool", "index.docker.io/x" is "docker.io/library/x",
// and a name whose first element has a '.' or a ':' or is "localhost" keeps
// it as its domain.
func NormalizeImageName(name string) string {
	domain, rest, found := strings.Cut(name, "/")
	if !found || (!strings.ContainsAny(domain, ".:") && domain != "localhost") {
		domain, rest = "docker.io", name
	}
	if domain == "index.docker.io" {
		domain = "docker.io"
	}
	if domain == "docker.io" && !strings.Contains(rest, "/") {
		rest = "library/" + rest
	}
	return domain + "/" + rest
}

// ImageRepository returns an image reference's repository: its name
// normalized (NormalizeImageName), without tag or digest.
// "busybox:1.36" is "docker.io/library/busybox".
func ImageRepository(ref string) string {
	name, _, _ := strings.Cut(ref, "@")
	if i := strings.LastIndexByte(name, ':'); i > strings.LastIndexByte(name, '/') {
		name = name[:i]
	}
	return NormalizeImageName(name)
}
