package fake

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
)

// defaultImageSize is the size of an image that was pulled or preloaded by
// reference.
const defaultImageSize = 1 << 20

// snapshotterRoot is where ImageFsInfo says images live by default, as
// containerd's overlayfs snapshotter.
const snapshotterRoot = "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs"

// PullBehavior scripts PullImage for one image reference.
type PullBehavior struct {
	// Latency is how long the pull takes on the runtime's clock. A pull
	// whose ctx ends first fails with the ctx's error.
	Latency time.Duration
	// Err, when set, makes the pull fail with it (wrapped) after Latency.
	Err error
	// ID, when set, is the ID of the image the registry serves for the
	// reference ("sha256:" and 64 hex digits; the bare hex is accepted).
	// References pulled with the same ID are one image with several repo
	// tags, as in containerd, where an image's ID is the digest of its
	// config. Empty means the sha256 of the normalized reference.
	ID string
	// User is the USER of the served image's config ("1002", "www-data",
	// "1003:1003"). ImageStatus reports it as containerd does: the part
	// before any colon, as Uid when it is a number and as Username
	// otherwise. Empty means no user.
	User string
	// Auth, when set, are the credentials the registry requires for the
	// reference: a pull without credentials, or with another username or
	// password, fails (after Latency) as containerd's does when the
	// registry refuses it ("pull access denied, …"; "… 401 Unauthorized"
	// for wrong credentials). A registry without Auth serves anyone, with
	// or without credentials.
	Auth *runtimeapi.AuthConfig
}

// SetPullBehavior scripts the pulls of ref (in any spelling that normalizes
// to the same reference). A zero PullBehavior restores the default: instant
// success (unless Options.Registry lacks ref).
func (r *Runtime) SetPullBehavior(ref string, b PullBehavior) {
	norm := NormalizeImage(ref)
	r.mu.Lock()
	defer r.mu.Unlock()
	if b == (PullBehavior{}) {
		delete(r.pulls, norm)
		return
	}
	r.pulls[norm] = b
}

// NormalizeImage spells an image reference as containerd stores it:
// "busybox" is "docker.io/library/busybox:latest", "nginx:1.27" is
// "docker.io/library/nginx:1.27", "registry.k8s.io/pause:3.10" is kept, and a
// reference with a digest keeps its digest and gets no default tag. An image
// ID ("sha256:" and 64 hex digits, or the bare hex) is returned as is.
func NormalizeImage(ref string) string {
	if strings.HasPrefix(ref, "sha256:") || isHexID(ref) {
		return ref
	}
	name, digest, hasDigest := strings.Cut(ref, "@")
	out := cri.NormalizeImageName(name)
	if !hasTag(out) && !hasDigest {
		out += ":latest"
	}
	if hasDigest {
		out += "@" + digest
	}
	return out
}

func isHexID(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// hasTag reports whether a reference without digest names a tag: a colon
// after the last slash.
func hasTag(name string) bool {
	i := strings.LastIndexByte(name, ':')
	return i > strings.LastIndexByte(name, '/')
}

func hasTagOrDigest(ref string) bool {
	name, _, hasDigest := strings.Cut(ref, "@")
	return hasDigest || hasTag(name)
}

// repository strips the tag and digest of a normalized reference.
func repository(norm string) string {
	name, _, _ := strings.Cut(norm, "@")
	if hasTag(name) {
		name = name[:strings.LastIndexByte(name, ':')]
	}
	return name
}

// newImage returns the image the fake pulls for ref: ID sha256 of the
// normalized reference, the reference as repo tag, or as repo digest when it
// has a digest.
func newImage(ref string) *runtimeapi.Image {
	norm := NormalizeImage(ref)
	sum := sha256.Sum256([]byte(norm))
	img := &runtimeapi.Image{Id: "sha256:" + hex.EncodeToString(sum[:]), Size: defaultImageSize}
	img.Spec = &runtimeapi.ImageSpec{Image: img.Id}
	name, digest, ok := strings.Cut(norm, "@")
	if ok {
		img.RepoDigests = []string{repository(name) + "@" + digest}
		if hasTag(name) {
			img.RepoTags = []string{name}
		}
	} else {
		img.RepoTags = []string{norm}
	}
	return img
}

// addImageLocked stores img (which it owns), indexing its references. A
// reference that named another image moves to img, as a tag does in
// containerd; an image left without references is forgotten. It returns the
// stored image, which is the existing one when img.Id is already present.
func (r *Runtime) addImageLocked(img *runtimeapi.Image) *runtimeapi.Image {
	if cur, ok := r.images[img.Id]; ok && len(img.RepoTags)+len(img.RepoDigests) == 0 {
		return cur
	}
	if cur, ok := r.images[img.Id]; ok {
		// Merge the references into the existing image.
		cur.RepoTags = mergeRefs(cur.RepoTags, img.RepoTags)
		cur.RepoDigests = mergeRefs(cur.RepoDigests, img.RepoDigests)
		img = cur
	}
	r.images[img.Id] = img
	for _, ref := range slices.Concat(img.RepoTags, img.RepoDigests) {
		if old, ok := r.imageRefs[ref]; ok && old != img.Id {
			if o := r.images[old]; o != nil {
				o.RepoTags = slices.DeleteFunc(o.RepoTags, func(s string) bool { return s == ref })
				o.RepoDigests = slices.DeleteFunc(o.RepoDigests, func(s string) bool { return s == ref })
				if len(o.RepoTags)+len(o.RepoDigests) == 0 {
					delete(r.images, old)
				}
			}
		}
		r.imageRefs[ref] = img.Id
	}
	return img
}

func mergeRefs(a, b []string) []string {
	for _, s := range b {
		if !slices.Contains(a, s) {
			a = append(a, s)
		}
	}
	return a
}

// findImageLocked finds a present image by ID (with or without "sha256:"),
// unique ID prefix, or reference in any spelling.
func (r *Runtime) findImageLocked(ref string) *runtimeapi.Image {
	if ref == "" {
		return nil
	}
	if img, ok := r.images[ref]; ok {
		return img
	}
	if img, ok := r.images["sha256:"+ref]; ok {
		return img
	}
	if id, ok := r.imageRefs[NormalizeImage(ref)]; ok {
		return r.images[id]
	}
	if isHexPrefix(strings.TrimPrefix(ref, "sha256:")) {
		prefix := "sha256:" + strings.TrimPrefix(ref, "sha256:")
		var found *runtimeapi.Image
		for id, img := range r.images {
			if strings.HasPrefix(id, prefix) {
				if found != nil {
					return nil // ambiguous
				}
				found = img
			}
		}
		return found
	}
	return nil
}

func isHexPrefix(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	return isHexID(s + strings.Repeat("0", 64-len(s)))
}

// AddImage makes an image present as if it had been pulled, with the ID,
// size and references the test chooses (e.g. to give image garbage
// collection sizes to rank). Id is required; references are normalized, and
// one that named another image moves to this one. Adding an ID that is
// present adds the references to it.
func (r *Runtime) AddImage(img *runtimeapi.Image) error {
	if img.GetId() == "" {
		return fmt.Errorf("add image: the image needs an ID: %w", cri.ErrInvalidArgument)
	}
	img = proto.CloneOf(img)
	for i, ref := range img.RepoTags {
		img.RepoTags[i] = NormalizeImage(ref)
	}
	for i, ref := range img.RepoDigests {
		img.RepoDigests[i] = NormalizeImage(ref)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addImageLocked(img)
	return nil
}

// ListImages implements cri.ImageManager. A filter naming an image (by
// reference or ID) returns that image only. Images are sorted by ID
// (containerd's order is unspecified).
func (r *Runtime) ListImages(ctx context.Context, filter *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	if err := r.enter(ctx, ListImages, &runtimeapi.ListImagesRequest{Filter: filter}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ref := filter.GetImage().GetImage(); ref != "" {
		if img := r.findImageLocked(ref); img != nil {
			return []*runtimeapi.Image{proto.CloneOf(img)}, nil
		}
		return []*runtimeapi.Image{}, nil
	}
	out := make([]*runtimeapi.Image, 0, len(r.images))
	for _, img := range r.images {
		out = append(out, proto.CloneOf(img))
	}
	slices.SortFunc(out, func(a, b *runtimeapi.Image) int { return strings.Compare(a.Id, b.Id) })
	return out, nil
}

// ImageStatus implements cri.ImageManager: an absent image is a response
// with a nil Image, not an error.
func (r *Runtime) ImageStatus(ctx context.Context, image *runtimeapi.ImageSpec, verbose bool) (*runtimeapi.ImageStatusResponse, error) {
	if err := r.enter(ctx, ImageStatus, &runtimeapi.ImageStatusRequest{Image: image, Verbose: verbose}); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return &runtimeapi.ImageStatusResponse{Image: proto.CloneOf(r.findImageLocked(image.GetImage()))}, nil
}

// PullImage implements cri.ImageManager. Any reference can be pulled unless
// Options.Registry limits them; SetPullBehavior adds latency or failure,
// requires credentials, or says which image (ID, user) the registry
// serves. It returns the image ID, as containerd.
func (r *Runtime) PullImage(ctx context.Context, image *runtimeapi.ImageSpec, auth *runtimeapi.AuthConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	if err := r.enter(ctx, PullImage, &runtimeapi.PullImageRequest{Image: image, Auth: auth, SandboxConfig: sandboxConfig}); err != nil {
		return "", err
	}
	ref := image.GetImage()
	if ref == "" {
		return "", fmt.Errorf("pull image: empty reference: %w", cri.ErrInvalidArgument)
	}
	norm := NormalizeImage(ref)
	r.mu.Lock()
	b := r.pulls[norm]
	known := r.registry == nil || r.registry[norm]
	r.mu.Unlock()
	if err := r.wait(ctx, b.Latency, nil); err != nil {
		return "", fmt.Errorf("pull image %q: %w", ref, err)
	}
	if b.Err != nil {
		return "", fmt.Errorf("failed to pull and unpack image %q: %w", norm, b.Err)
	}
	if want := b.Auth; want != nil {
		switch {
		case auth.GetUsername() == "" && auth.GetPassword() == "":
			return "", fmt.Errorf("failed to pull and unpack image %q: failed to resolve reference %q: pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials", norm, norm)
		case auth.GetUsername() != want.GetUsername() || auth.GetPassword() != want.GetPassword():
			return "", fmt.Errorf("failed to pull and unpack image %q: failed to resolve reference %q: failed to authorize: failed to fetch oauth token: unexpected status from GET request to https://%s/token: 401 Unauthorized", norm, norm, registryHost(norm))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if strings.HasPrefix(norm, "sha256:") || isHexID(norm) {
		// An image ID cannot be pulled; it can only name a present image.
		if img := r.findImageLocked(norm); img != nil {
			return img.Id, nil
		}
		known = false
	}
	if !known {
		return "", fmt.Errorf("failed to pull and unpack image %q: failed to resolve reference %q: %s: not found in the fake registry: %w", norm, norm, norm, cri.ErrNotFound)
	}
	pulled := newImage(ref)
	if b.ID != "" {
		id := b.ID
		if isHexID(id) {
			id = "sha256:" + id
		}
		if !strings.HasPrefix(id, "sha256:") || !isHexID(id[len("sha256:"):]) {
			return "", fmt.Errorf("pull image %q: the scripted image ID %q is not sha256 and 64 hex digits: %w", norm, b.ID, cri.ErrInvalidArgument)
		}
		pulled.Id, pulled.Spec.Image = id, id
	}
	pulled.Uid, pulled.Username = imageUser(b.User)
	img := r.addImageLocked(pulled)
	r.log.Debug("image pulled", "ref", norm, "id", img.Id)
	return img.Id, nil
}

// registryHost is the registry of a normalized reference.
func registryHost(norm string) string {
	host, _, _ := strings.Cut(norm, "/")
	return host
}

// imageUser splits an image config's USER as containerd reports it in
// ImageStatus: the user part only (a group after a colon is dropped), as a
// UID when it is a number, as a user name otherwise.
func imageUser(user string) (*runtimeapi.Int64Value, string) {
	if user == "" {
		return nil, ""
	}
	user, _, _ = strings.Cut(user, ":")
	if uid, err := strconv.ParseInt(user, 10, 64); err == nil {
		return &runtimeapi.Int64Value{Value: uid}, ""
	}
	return nil, user
}

// RemoveImage implements cri.ImageManager: it removes the image with all its
// references, as containerd. Removing an absent image is not an error.
func (r *Runtime) RemoveImage(ctx context.Context, image *runtimeapi.ImageSpec) error {
	if err := r.enter(ctx, RemoveImage, &runtimeapi.RemoveImageRequest{Image: image}); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if img := r.findImageLocked(image.GetImage()); img != nil {
		delete(r.images, img.Id)
		for _, ref := range slices.Concat(img.RepoTags, img.RepoDigests) {
			delete(r.imageRefs, ref)
		}
	}
	return nil
}

// SetImageFsInfo sets what ImageFsInfo returns (the timestamps of its
// filesystems are filled in with the clock's time when zero). nil restores
// the default.
func (r *Runtime) SetImageFsInfo(info *runtimeapi.ImageFsInfoResponse) {
	info = proto.CloneOf(info)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.imageFs = info
}

// Filesystems are where the fake says it keeps images and the containers'
// writable layers. An empty mountpoint is the snapshotter root
// (/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs).
type Filesystems struct {
	// Images is the mountpoint of the image filesystem.
	Images string
	// Containers is the mountpoint of the container filesystem. When it
	// differs from Images, the runtime's writable layers are on a
	// filesystem of their own, as CRI-O's with a split image store
	// (upstream's KubeletSeparateDiskGC).
	Containers string
}

// SetFilesystems sets the mountpoints ImageFsInfo and the containers'
// writable-layer stats report (see Filesystems); the zero value restores
// the default, one filesystem for both.
func (r *Runtime) SetFilesystems(fss Filesystems) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fss = fss
}

// imagesFsLocked and containersFsLocked are the mountpoints of the image
// and container filesystems.
func (r *Runtime) imagesFsLocked() string { return cmp.Or(r.fss.Images, snapshotterRoot) }

func (r *Runtime) containersFsLocked() string { return cmp.Or(r.fss.Containers, snapshotterRoot) }

// ImageFsInfo implements cri.ImageFSInfoer. By default it reports one
// filesystem, at containerd's overlayfs snapshotter root, for images and
// containers alike, whose used bytes are the images' total size and used
// inodes their number. With SetFilesystems naming two mountpoints, the
// image filesystem is the images' and the container filesystem holds the
// writable layers: its used bytes and inodes are the sums of the
// containers' writable-layer stats. SetImageFsInfo overrides both.
func (r *Runtime) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	if err := r.enter(ctx, ImageFsInfo, &runtimeapi.ImageFsInfoRequest{}); err != nil {
		return nil, err
	}
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.imageFs != nil {
		resp := proto.CloneOf(r.imageFs)
		for _, fs := range slices.Concat(resp.ImageFilesystems, resp.ContainerFilesystems) {
			if fs.Timestamp == 0 {
				fs.Timestamp = now
			}
		}
		return resp, nil
	}
	var used uint64
	for _, img := range r.images {
		used += img.Size
	}
	usage := func(mountpoint string, bytes, inodes uint64) *runtimeapi.FilesystemUsage {
		return &runtimeapi.FilesystemUsage{
			Timestamp:  now,
			FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: mountpoint},
			UsedBytes:  &runtimeapi.UInt64Value{Value: bytes},
			InodesUsed: &runtimeapi.UInt64Value{Value: inodes},
		}
	}
	fs := usage(r.imagesFsLocked(), used, uint64(len(r.images)))
	cfs := proto.CloneOf(fs)
	if mp := r.containersFsLocked(); mp != fs.FsId.Mountpoint {
		var bytes, inodes uint64
		for _, c := range r.containers.all() { // in creation order
			wl := r.containerStatsLocked(c, now).GetWritableLayer()
			bytes += wl.GetUsedBytes().GetValue()
			inodes += wl.GetInodesUsed().GetValue()
		}
		cfs = usage(mp, bytes, inodes)
	}
	return &runtimeapi.ImageFsInfoResponse{
		ImageFilesystems:     []*runtimeapi.FilesystemUsage{fs},
		ContainerFilesystems: []*runtimeapi.FilesystemUsage{cfs},
	}, nil
}
