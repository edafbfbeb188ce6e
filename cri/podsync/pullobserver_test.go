package podsync_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	v1 "k8s.io/api/core/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeletkit/kubeletkit/cri/fake"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
	"github.com/kubeletkit/kubeletkit/cri/podsync/containerconfig"
)

// Options.Pulls is told of every pull, failed or not, with its times on
// the Syncer's clock and, after a success, the image's size as the runtime
// reports it (ImageStatus, as upstream asks); a present image is no pull.
func TestSyncPodPullObserver(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		image     string
		policy    v1.PullPolicy
		pullErr   error
		statusErr bool
		want      []podsync.Pull
	}{
		{name: "a pull", image: "example.com/app:1",
			want: []podsync.Pull{{Image: "example.com/app:1", Start: now, End: now, Size: 1 << 20}}},
		{name: "a pull that fails", image: "example.com/app:1", pullErr: errors.New("manifest unknown"),
			want: []podsync.Pull{{Image: "example.com/app:1", Start: now, End: now}}},
		{name: "a pull whose size the runtime does not tell", image: "example.com/app:1", policy: v1.PullAlways, statusErr: true,
			want: []podsync.Pull{{Image: "example.com/app:1", Start: now, End: now}}},
		{name: "a present image", image: "busybox:1"},
		{name: "pull policy Always pulls a present image", image: "busybox:1", policy: v1.PullAlways,
			want: []podsync.Pull{{Image: "busybox:1", Start: now, End: now, Size: 1 << 20}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(now)
			rt := fake.New(fake.Options{Clock: clk, Images: []string{"busybox:1"}})
			t.Cleanup(rt.Close)
			if tc.pullErr != nil {
				rt.SetPullBehavior(tc.image, fake.PullBehavior{Err: tc.pullErr})
			}
			var mu sync.Mutex
			var got []podsync.Pull
			s, err := podsync.New(podsync.Options{Runtime: rt, Clock: clk, Config: containerconfig.Options{LogRoot: t.TempDir(), NodeName: "node-1"},
				Pulls: podsync.PullObserverFunc(func(pod *v1.Pod, p podsync.Pull) {
					mu.Lock()
					defer mu.Unlock()
					assert.Equal(t, "web", pod.Name)
					if tc.pullErr != nil {
						assert.ErrorIs(t, p.Err, tc.pullErr)
						p.Err = nil
					}
					got = append(got, p)
				})})
			require.NoError(t, err)
			if tc.statusErr {
				// Pull policy Always asks nothing before the pull: the first
				// ImageStatus is the one for the size.
				rt.InjectFault(fake.ImageStatus, fake.Fault{Err: errors.New("store locked"), Times: 1})
			}
			h := &harness{t: t, clk: clk, rt: rt, s: s}
			c := v1.Container{Name: "app", Image: tc.image, ImagePullPolicy: tc.policy}
			h.sync(newPod("", nil, c))
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, tc.want, got)
		})
	}
}
