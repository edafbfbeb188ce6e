package containerconfig_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

func TestRunAsNonRoot(t *testing.T) {
	yes, no := true, false
	root, user := int64(0), int64(1000)
	const ref = `(pod: "web_default(uid-1)", container: app)`
	tests := []struct {
		name      string
		image     string // "": busybox:1, which names no user
		imageUser string
		pod, ctr  *v1.SecurityContext
		wantErr   string
		wantLooks bool // the image's user was asked for
	}{
		{name: "no policy"},
		{name: "policy, and a non-root runAsUser", pod: &v1.SecurityContext{RunAsNonRoot: &yes, RunAsUser: &user}},
		{name: "policy, and runAsUser 0", pod: &v1.SecurityContext{RunAsNonRoot: &yes, RunAsUser: &root},
			wantErr: "container's runAsUser breaks non-root policy " + ref},
		{name: "the container's runAsUser wins", pod: &v1.SecurityContext{RunAsNonRoot: &yes, RunAsUser: &root}, ctr: &v1.SecurityContext{RunAsUser: &user}},
		{name: "the container's policy wins", pod: &v1.SecurityContext{RunAsNonRoot: &yes}, ctr: &v1.SecurityContext{RunAsNonRoot: &no}},
		{name: "an image without a user runs as root", ctr: &v1.SecurityContext{RunAsNonRoot: &yes},
			wantErr: "container has runAsNonRoot and image will run as root " + ref, wantLooks: true},
		{name: "an image whose user is root", image: "root:1", imageUser: "0", ctr: &v1.SecurityContext{RunAsNonRoot: &yes},
			wantErr: "container has runAsNonRoot and image will run as root " + ref, wantLooks: true},
		{name: "an image with a numeric user", image: "app:1", imageUser: "1002:1002", ctr: &v1.SecurityContext{RunAsNonRoot: &yes}, wantLooks: true},
		{name: "an image with a user name", image: "www:1", imageUser: "www-data", pod: &v1.SecurityContext{RunAsNonRoot: &yes},
			wantErr: "container has runAsNonRoot and image has non-numeric user (www-data), cannot verify user is non-root " + ref, wantLooks: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := fake.New(fake.Options{Images: []string{"busybox:1"}})
			t.Cleanup(rt.Close)
			s := newBuilder(t, containerconfig.Options{Images: rt})
			c := ctr("app")
			if tt.image != "" {
				c.Image = tt.image
				rt.SetPullBehavior(tt.image, fake.PullBehavior{User: tt.imageUser})
				_, err := rt.PullImage(context.Background(), &runtimeapi.ImageSpec{Image: tt.image}, nil, nil)
				require.NoError(t, err)
			}
			c.SecurityContext = tt.ctr
			pod := newPod("", nil, c)
			if tt.pod != nil {
				pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: tt.pod.RunAsNonRoot, RunAsUser: tt.pod.RunAsUser}
			}
			_, err := containerConfig(s, pod)
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr)
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tt.wantLooks, len(rt.CallsOf(fake.ImageStatus)) > 0)
		})
	}
}

// Without Images, nothing can say an image's user is not root: a container
// that needs it checked is refused, one that does not is built.
func TestRunAsNonRootWithoutImages(t *testing.T) {
	b := newBuilder(t, containerconfig.Options{})
	c := ctr("app")
	c.SecurityContext = &v1.SecurityContext{RunAsNonRoot: ptr(true)}
	_, err := containerConfig(b, newPod("", nil, c))
	assert.EqualError(t, err, `container has runAsNonRoot and its image's user cannot be verified, no image source defined (pod: "web_default(uid-1)", container: app)`)
	c.SecurityContext.RunAsUser = ptr[int64](1000)
	_, err = containerConfig(b, newPod("", nil, c))
	assert.NoError(t, err)
}
