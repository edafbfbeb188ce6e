package localstate_test

import (
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeletkit/kubeletkit/localstate"
)

func testPod(name, rv string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), ResourceVersion: rv},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
}

func TestStatePodsWriteOnlyWhatChanged(t *testing.T) {
	m := localstate.NewMemory(0)
	st, err := localstate.New(m)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name      string
		pods      []*v1.Pod
		wantWrite bool
		want      []string
	}{
		{"first list", []*v1.Pod{testPod("a", "1"), testPod("b", "1")}, true, []string{"a", "b"}},
		{"same again", []*v1.Pod{testPod("b", "1"), testPod("a", "1")}, false, []string{"a", "b"}},
		{"a updated", []*v1.Pod{testPod("a", "2"), testPod("b", "1")}, true, []string{"a", "b"}},
		{"b deleted, c added", []*v1.Pod{testPod("a", "2"), testPod("c", "5")}, true, []string{"a", "c"}},
		{"nothing", nil, true, nil},
	}
	for _, s := range steps {
		before := m.Writes()
		wrote, err := st.SetPods(s.pods)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if wrote != s.wantWrite || (m.Writes()-before == 1) != s.wantWrite {
			t.Fatalf("%s: wrote %v with %d writes, want %v", s.name, wrote, m.Writes()-before, s.wantWrite)
		}
		pods, err := st.Pods()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range pods {
			got = append(got, p.Name)
		}
		if len(got) != len(s.want) || (len(got) > 0 && (got[0] != s.want[0] || got[len(got)-1] != s.want[len(s.want)-1])) {
			t.Fatalf("%s: pods %v, want %v", s.name, got, s.want)
		}
	}
}

func TestStateRefreshPod(t *testing.T) {
	m := localstate.NewMemory(0)
	st, err := localstate.New(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetPods([]*v1.Pod{testPod("a", "1")}); err != nil {
		t.Fatal(err)
	}
	succeeded := testPod("a", "2")
	succeeded.Status.Phase = v1.PodSucceeded
	steps := []struct {
		name      string
		pod       *v1.Pod
		wantWrite bool
		wantErr   bool
		want      map[string]string // name -> resourceVersion/phase kept
	}{
		{"no pod", nil, false, true, map[string]string{"a": "1/"}},
		{"a pod not kept is not added", testPod("b", "4"), false, false, map[string]string{"a": "1/"}},
		{"the same resourceVersion", testPod("a", "1"), false, false, map[string]string{"a": "1/"}},
		{"a newer copy replaces it", succeeded, true, false, map[string]string{"a": "2/Succeeded"}},
		{"and again costs nothing", succeeded, false, false, map[string]string{"a": "2/Succeeded"}},
	}
	for _, s := range steps {
		before := m.Writes()
		wrote, err := st.RefreshPod(s.pod)
		if (err != nil) != s.wantErr {
			t.Fatalf("%s: err %v, want an error: %v", s.name, err, s.wantErr)
		}
		if wrote != s.wantWrite || (m.Writes()-before == 1) != s.wantWrite {
			t.Fatalf("%s: wrote %v with %d writes, want %v", s.name, wrote, m.Writes()-before, s.wantWrite)
		}
		pods, err := st.Pods()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, p := range pods {
			got[p.Name] = p.ResourceVersion + "/" + string(p.Status.Phase)
		}
		if len(got) != len(s.want) || got["a"] != s.want["a"] {
			t.Fatalf("%s: kept %v, want %v", s.name, got, s.want)
		}
	}
	if p, ok, err := st.Pod("uid-a"); err != nil || !ok || p.Status.Phase != v1.PodSucceeded {
		t.Fatalf("Pod(uid-a) = %v, %v, %v; want the refreshed copy", p, ok, err)
	}
	if _, ok, err := st.Pod("uid-b"); err != nil || ok {
		t.Fatalf("Pod(uid-b) = %v, %v; want none", ok, err)
	}
	// SetPods knows what RefreshPod wrote: the watch's copy of it costs
	// no write.
	before := m.Writes()
	if wrote, err := st.SetPods([]*v1.Pod{succeeded}); err != nil || wrote || m.Writes() != before {
		t.Fatalf("SetPods of the refreshed copy: wrote %v (%d writes), err %v", wrote, m.Writes()-before, err)
	}
}

func TestStateReopenKnowsWhatItHolds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	b, _ := localstate.OpenBolt(path, localstate.BoltOptions{})
	st, _ := localstate.New(b)
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg", UID: "u", ResourceVersion: "3"}, Data: map[string]string{"k": "v"}}
	if err := st.PutConfigMap(cm); err != nil {
		t.Fatal(err)
	}
	if _, err := st.SetPods([]*v1.Pod{testPod("a", "1")}); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()

	b, _ = localstate.OpenBolt(path, localstate.BoltOptions{})
	defer b.Close()
	m := &countingStore{Store: b}
	st, _ = localstate.New(m)
	if err := st.PutConfigMap(cm); err != nil {
		t.Fatal(err)
	}
	if wrote, _ := st.SetPods([]*v1.Pod{testPod("a", "1")}); wrote {
		t.Fatal("the same pod was written again after a reopen")
	}
	if m.writes != 0 {
		t.Fatalf("%d writes of what the store held already", m.writes)
	}
	got, ok, err := st.ConfigMap("default", "cfg")
	if err != nil || !ok || got.Data["k"] != "v" {
		t.Fatalf("ConfigMap = %v %v %v", got, ok, err)
	}
	if err := st.DeleteConfigMap("default", "cfg"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := st.ConfigMap("default", "cfg"); ok {
		t.Fatal("deleted configMap still kept")
	}
}

type countingStore struct {
	localstate.Store
	writes int
}

func (c *countingStore) Write(b localstate.Batch) error {
	c.writes++
	return c.Store.Write(b)
}

func TestStatePodStatuses(t *testing.T) {
	m := &countingStore{Store: localstate.NewMemory(0)}
	st, _ := localstate.New(m)
	a, b := testPod("a", "1"), testPod("b", "1")
	// An acknowledged status with none pending costs no write.
	if err := st.DeletePodStatus(a.UID); err != nil || m.writes != 0 {
		t.Fatalf("DeletePodStatus with none kept: %v, %d writes", err, m.writes)
	}
	if err := st.PutPodStatus(a, v1.PodStatus{Phase: v1.PodPending}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutPodStatus(a, v1.PodStatus{Phase: v1.PodRunning}); err != nil {
		t.Fatal(err)
	}
	if err := st.PutPodStatus(b, v1.PodStatus{Phase: v1.PodSucceeded}); err != nil {
		t.Fatal(err)
	}
	got, err := st.PodStatuses()
	if err != nil || len(got) != 2 || got[0].Status.Phase != v1.PodRunning || got[0].UID != a.UID || got[1].Name != "b" {
		t.Fatalf("PodStatuses = %v %v", got, err)
	}
	if len(got[0].Spec.Containers) != 0 {
		t.Fatal("a kept status carries the pod's spec")
	}
	if err := st.DeletePodStatus(a.UID); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := st.PodStatus(a.UID); ok {
		t.Fatal("acknowledged status still kept")
	}
	if p, ok, _ := st.PodStatus(b.UID); !ok || p.Status.Phase != v1.PodSucceeded {
		t.Fatalf("PodStatus(b) = %v %v", p, ok)
	}
}

func TestStateTokens(t *testing.T) {
	st, _ := localstate.New(localstate.NewMemory(0))
	exp := int64(3600)
	req := func(pod types.UID) *authenticationv1.TokenRequest {
		return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"api"}, ExpirationSeconds: &exp,
			BoundObjectRef: &authenticationv1.BoundObjectReference{Kind: "Pod", Name: "p", UID: pod}}}
	}
	ka, kb := localstate.TokenKey("default", "sa", req("pa")), localstate.TokenKey("default", "sa", req("pb"))
	if ka == kb {
		t.Fatal("tokens of two pods share a key")
	}
	issued := &authenticationv1.TokenRequest{Status: authenticationv1.TokenRequestStatus{Token: "t", ExpirationTimestamp: metav1.NewTime(time.Unix(1000, 0))}}
	if err := st.PutToken(ka, issued); err != nil {
		t.Fatal(err)
	}
	if err := st.PutToken(kb, issued); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteTokensOf(map[types.UID]bool{"pa": true}); err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := st.Token(ka); !ok || got.Status.Token != "t" || !got.Status.ExpirationTimestamp.Equal(&issued.Status.ExpirationTimestamp) {
		t.Fatalf("Token(a) = %v %v", got, ok)
	}
	if _, ok, _ := st.Token(kb); ok {
		t.Fatal("the token of a pod that is gone is still kept")
	}
}

func TestStateUndecodable(t *testing.T) {
	m := localstate.NewMemory(0)
	st, _ := localstate.New(m)
	if _, err := st.SetPods([]*v1.Pod{testPod("a", "1")}); err != nil {
		t.Fatal(err)
	}
	if err := m.Write(localstate.Batch{Puts: []localstate.Entry{put(localstate.Pods, "junk", "\xff\xff")}}); err != nil {
		t.Fatal(err)
	}
	pods, err := st.Pods()
	if err == nil || len(pods) != 1 || pods[0].Name != "a" {
		t.Fatalf("Pods = %v, %v; want pod a and an error naming junk", pods, err)
	}
}

func TestStateServices(t *testing.T) {
	m := &countingStore{Store: localstate.NewMemory(0)}
	st, _ := localstate.New(m)
	svc := func(name, rv string) *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("u-" + name), ResourceVersion: rv},
			Spec: v1.ServiceSpec{ClusterIP: "10.0.0.1", Ports: []v1.ServicePort{{Name: "https", Port: 443}}}}
	}
	wrote, err := st.SetServices([]*v1.Service{svc("kubernetes", "1"), svc("web", "1")})
	require(t, err == nil && wrote, "first SetServices: %v %v", wrote, err)
	wrote, err = st.SetServices([]*v1.Service{svc("web", "1"), svc("kubernetes", "1")})
	require(t, err == nil && !wrote && m.writes == 1, "unchanged: %v %v, %d writes", wrote, err, m.writes)
	_, err = st.SetServices([]*v1.Service{svc("kubernetes", "2")})
	require(t, err == nil, "%v", err)
	got, err := st.Services()
	require(t, err == nil && len(got) == 1 && got[0].ResourceVersion == "2" && got[0].Spec.Ports[0].Port == 443, "Services = %v %v", got, err)
}

func require(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Fatalf(format, args...)
	}
}
