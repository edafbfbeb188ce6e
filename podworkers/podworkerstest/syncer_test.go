package podworkerstest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/podworkers"
	"github.com/kubeletkit/kubeletkit/podworkers/podworkerstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func pod(uid string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid}}
}

// step is one call made to the fake.
type step func(ctx context.Context, s *podworkerstest.Syncer) error

func syncPod(uid string, t podworkers.UpdateType) step {
	return func(ctx context.Context, s *podworkerstest.Syncer) error {
		_, err := s.SyncPod(ctx, t, pod(uid), nil)
		return err
	}
}

func terminating(uid string) step {
	return func(ctx context.Context, s *podworkerstest.Syncer) error {
		return s.SyncTerminatingPod(ctx, pod(uid), 30, nil)
	}
}

func terminated(uid string) step {
	return func(ctx context.Context, s *podworkerstest.Syncer) error {
		return s.SyncTerminatedPod(ctx, pod(uid))
	}
}

func runtimePod(uid string) step {
	return func(ctx context.Context, s *podworkerstest.Syncer) error {
		return s.SyncTerminatingRuntimePod(ctx, pod(uid))
	}
}

func TestVerify(t *testing.T) {
	tests := []struct {
		name    string
		steps   []step
		wantErr string
	}{
		{name: "full lifecycle", steps: []step{syncPod("a", podworkers.SyncPodCreate), terminating("a"), terminated("a")}},
		{name: "pods are independent", steps: []step{terminating("a"), syncPod("b", podworkers.SyncPodCreate)}},
		{name: "sync after terminating", steps: []step{terminating("a"), syncPod("a", podworkers.SyncPodUpdate)},
			wantErr: "SyncPod called after termination started"},
		{name: "terminated too early", steps: []step{syncPod("a", podworkers.SyncPodCreate), terminated("a")},
			wantErr: "SyncTerminatedPod called before SyncTerminatingPod succeeded"},
		{name: "terminating twice", steps: []step{terminating("a"), terminating("a")},
			wantErr: "SyncTerminatingPod called after it succeeded"},
		{name: "anything after finished", steps: []step{terminating("a"), terminated("a"), terminated("a")},
			wantErr: "called after SyncTerminatedPod succeeded"},
		{name: "restart with a create", steps: []step{terminating("a"), terminated("a"), syncPod("a", podworkers.SyncPodCreate)}},
		{name: "runtime pod then configured pod", steps: []step{runtimePod("a"), syncPod("a", podworkers.SyncPodCreate)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &podworkerstest.Syncer{}
			for _, st := range tt.steps {
				if err := st(context.Background(), s); err != nil {
					t.Fatal(err)
				}
			}
			err := s.Verify()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Verify() = %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Verify() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestOverlapIsAViolation(t *testing.T) {
	s := &podworkerstest.Syncer{}
	inside := make(chan struct{})
	release := make(chan struct{})
	s.Funcs.SyncPodFunc = func(ctx context.Context, _ podworkers.UpdateType, p, _ *v1.Pod) (bool, error) {
		if p.Name == "first" {
			close(inside)
			<-release
		}
		return false, nil
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		p := pod("a")
		p.Name = "first"
		_, _ = s.SyncPod(context.Background(), podworkers.SyncPodCreate, p, nil)
	}()
	<-inside
	if k, ok := s.Running("a"); !ok || k != podworkers.WorkSync {
		t.Fatalf("Running = %v, %v", k, ok)
	}
	_, _ = s.SyncPod(context.Background(), podworkers.SyncPodUpdate, pod("a"), nil)
	close(release)
	<-done
	if err := s.Verify(); err == nil || !strings.Contains(err.Error(), "while SyncPod runs") {
		t.Fatalf("Verify() = %v", err)
	}
}

func TestFuncsAndWait(t *testing.T) {
	s := &podworkerstest.Syncer{}
	boom := errors.New("boom")
	s.Funcs.SyncTerminatedPodFunc = func(context.Context, *v1.Pod) error { return boom }
	go func() {
		_ = s.SyncTerminatingPod(context.Background(), pod("a"), 7, nil)
		_ = s.SyncTerminatedPod(context.Background(), pod("a"))
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Wait(ctx, func(c []podworkerstest.Call) bool { return len(c) == 2 }); err != nil {
		t.Fatal(err)
	}
	calls := s.CallsFor("a")
	if got := fmt.Sprint(calls); got != "[SyncTerminatingPod a grace=7 -> ok SyncTerminatedPod a -> err: boom]" {
		t.Errorf("calls = %s", got)
	}
	if !errors.Is(calls[1].Err, boom) || len(s.CallsFor("b")) != 0 {
		t.Errorf("calls = %+v", calls)
	}
	cancelled, stop := context.WithCancel(context.Background())
	stop()
	if err := s.Wait(cancelled, func([]podworkerstest.Call) bool { return false }); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait on a cancelled ctx = %v", err)
	}
}

func TestStatusWaiter(t *testing.T) {
	w := &podworkerstest.StatusWaiter{}
	at := time.Unix(100, 0)
	if err := w.WaitNewerThan(context.Background(), "a", at); err != nil {
		t.Fatal(err)
	}
	w.Func = func(context.Context, types.UID, time.Time) error { return errors.New("not ready") }
	if err := w.WaitNewerThan(context.Background(), "b", time.Time{}); err == nil {
		t.Error("Func not called")
	}
	if got := w.Waits(); len(got) != 2 || got[0].UID != "a" || !got[0].NewerThan.Equal(at) {
		t.Errorf("Waits() = %+v", got)
	}
}
