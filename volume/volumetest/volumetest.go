package volumetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeletkit/kubeletkit/volume"
)

// MountCall is one recorded Mount or Unmount.
type MountCall struct {
	Op      string // "mount" or "unmount"
	Source  string
	Target  string
	FSType  string
	Options []string
	// Resolved is, for a source under /proc (a bind mount through a file
	// descriptor, as pinned subPaths are), the path that source led to at
	// the call.
	Resolved string
}

// Mounter is a fake volume.Mounter: Mount records the target as mounted
// (nothing is mounted; the directory stays a plain one, and a bind mount's
// target stays empty: MountCall.Resolved says what it would show), Unmount forgets
// it, IsMountPoint answers from the record. SetMountErr and SetUnmountErr
// make those calls fail. The zero value is ready; it is safe for concurrent
// use, so a test may change the errors while a manager runs.
type Mounter struct {
	mu         sync.Mutex
	mounted    map[string]MountCall
	calls      []MountCall
	mountErr   error
	unmountErr error
	seLinux    bool
}

// SetSELinux says whether every filesystem carries SELinux labels from
// now on (SupportsSELinux's answer; false at first, as on a host without
// SELinux).
func (m *Mounter) SetSELinux(labeled bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.seLinux = labeled
}

// SupportsSELinux answers what SetSELinux last said, for any path.
func (m *Mounter) SupportsSELinux(string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.seLinux, nil
}

// SetMountErr makes every Mount fail with err from now on (nil: succeed).
func (m *Mounter) SetMountErr(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mountErr = err
}

// SetUnmountErr makes every Unmount fail with err from now on (nil:
// succeed).
func (m *Mounter) SetUnmountErr(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unmountErr = err
}

var (
	_ volume.Mounter        = (*Mounter)(nil)
	_ volume.SELinuxSupport = (*Mounter)(nil)
)

// Mount records a mount.
func (m *Mounter) Mount(source, target, fstype string, options []string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := MountCall{Op: "mount", Source: source, Target: filepath.Clean(target), FSType: fstype, Options: append([]string(nil), options...)}
	if strings.HasPrefix(source, "/proc/") {
		c.Resolved, _ = os.Readlink(source)
	}
	m.calls = append(m.calls, c)
	if m.mountErr != nil {
		return m.mountErr
	}
	if m.mounted == nil {
		m.mounted = map[string]MountCall{}
	}
	if _, ok := m.mounted[c.Target]; ok {
		return fmt.Errorf("fake mount: %s is already mounted", target)
	}
	m.mounted[c.Target] = c
	return nil
}

// Unmount records an unmount.
func (m *Mounter) Unmount(target string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := MountCall{Op: "unmount", Target: filepath.Clean(target)}
	m.calls = append(m.calls, c)
	if m.unmountErr != nil {
		return m.unmountErr
	}
	if _, ok := m.mounted[c.Target]; !ok {
		return fmt.Errorf("fake unmount: %s is not mounted", target)
	}
	delete(m.mounted, c.Target)
	return nil
}

// IsMountPoint reports whether path is recorded as mounted.
func (m *Mounter) IsMountPoint(path string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.mounted[filepath.Clean(path)]
	return ok, nil
}

// Calls returns the recorded calls, oldest first.
func (m *Mounter) Calls() []MountCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]MountCall(nil), m.calls...)
}

// Mounted returns what is mounted now, by target.
func (m *Mounter) Mounted() map[string]MountCall {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]MountCall, len(m.mounted))
	for k, v := range m.mounted {
		out[k] = v
	}
	return out
}

// TokenCall is one recorded token request.
type TokenCall struct {
	Namespace, Name string
	Request         *authenticationv1.TokenRequest
}

// Tokens is a fake volume.TokenSource: the n-th token reads
// "token-<namespace>-<name>-<n>" and expires ExpirationSeconds after Now.
// Err, when set, fails requests. Now is required.
type Tokens struct {
	Now func() time.Time
	Err error

	mu    sync.Mutex
	calls []TokenCall
}

var _ volume.TokenSource = (*Tokens)(nil)

// GetServiceAccountToken issues a token.
func (t *Tokens) GetServiceAccountToken(_ context.Context, namespace, name string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls = append(t.calls, TokenCall{namespace, name, req.DeepCopy()})
	if t.Err != nil {
		return nil, t.Err
	}
	out := req.DeepCopy()
	exp := int64(3600)
	if req.Spec.ExpirationSeconds != nil {
		exp = *req.Spec.ExpirationSeconds
	}
	out.Status.Token = fmt.Sprintf("token-%s-%s-%d", namespace, name, len(t.calls))
	out.Status.ExpirationTimestamp = metav1.NewTime(t.Now().Add(time.Duration(exp) * time.Second))
	return out, nil
}

// Calls returns the recorded requests.
func (t *Tokens) Calls() []TokenCall {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]TokenCall(nil), t.calls...)
}
