package podsync_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/podsync"
)

type kill struct {
	name   string
	reason podsync.KillReason
}

type want struct {
	killPod, create bool
	attempt         uint32
	kills           []kill
	nextInit        int
	inits           []int
	apps            []int
	initFailed      bool
}

func summarize(a podsync.Actions) want {
	w := want{killPod: a.KillPod, create: a.CreateSandbox, attempt: a.SandboxAttempt, nextInit: a.NextInitContainer,
		inits: a.InitContainersToStart, apps: a.ContainersToStart, initFailed: a.InitFailed}
	for _, k := range a.ContainersToKill {
		w.kills = append(w.kills, kill{k.Name, k.Reason})
	}
	return w
}

func failed(ids ...string) podsync.ProbeResults {
	return podsync.ProbeResultsFunc(func(id string) bool {
		for _, x := range ids {
			if x == id {
				return true
			}
		}
		return false
	})
}

func TestComputeActionsRestartPolicies(t *testing.T) {
	app := ctr("app")
	// Every restart policy with every exit of the only app container.
	tests := []struct {
		policy v1.RestartPolicy
		exit   int32
		want   want
	}{
		{v1.RestartPolicyAlways, 0, want{nextInit: -1, apps: []int{0}}},
		{v1.RestartPolicyAlways, 3, want{nextInit: -1, apps: []int{0}}},
		{v1.RestartPolicyAlways, 137, want{nextInit: -1, apps: []int{0}}},
		{v1.RestartPolicyOnFailure, 0, want{killPod: true, nextInit: -1}},
		{v1.RestartPolicyOnFailure, 3, want{nextInit: -1, apps: []int{0}}},
		{v1.RestartPolicyOnFailure, 137, want{nextInit: -1, apps: []int{0}}},
		{v1.RestartPolicyNever, 0, want{killPod: true, nextInit: -1}},
		{v1.RestartPolicyNever, 3, want{killPod: true, nextInit: -1}},
		{"", 3, want{nextInit: -1, apps: []int{0}}}, // empty policy is Always
	}
	for _, tt := range tests {
		t.Run(string(tt.policy)+"/exit="+itoa(tt.exit), func(t *testing.T) {
			pod := newPod(tt.policy, nil, app)
			got := podsync.ComputeActions(pod, status(ready(), cst("c1", app, exited, tt.exit, 0)), podsync.Probes{})
			assert.Equal(t, tt.want, summarize(got))
		})
	}
}

func itoa(i int32) string {
	return string(rune('0'+i/100)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
}

func TestComputeActions(t *testing.T) {
	app, app2 := ctr("app"), ctr("app2")
	i1, i2 := ctr("init1"), ctr("init2")
	sc := sidecar("sidecar")
	withStartupSC := sc
	withStartupSC.StartupProbe = &v1.Probe{}
	changed := app
	changed.Image = "busybox:2"
	withLiveness := app
	withLiveness.LivenessProbe = &v1.Probe{}
	withStartup := app
	withStartup.StartupProbe = &v1.Probe{}
	// Container restart rules (upstream's ContainerRestartRules, on by
	// default since 1.35): a container's own restartPolicy and its
	// restartPolicyRules decide its restart, not only the pod's policy.
	own := func(c v1.Container, p v1.ContainerRestartPolicy, rules ...v1.ContainerRestartRule) v1.Container {
		c.RestartPolicy, c.RestartPolicyRules = &p, rules
		return c
	}
	on42 := v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}
	always := own(app, v1.ContainerRestartPolicyAlways)
	neverIn := own(app, v1.ContainerRestartPolicyNever)
	retry42 := own(app, v1.ContainerRestartPolicyNever, on42)
	live := own(app, v1.ContainerRestartPolicyAlways)
	live.LivenessProbe = &v1.Probe{}
	liveNever := own(app, v1.ContainerRestartPolicyNever, on42)
	liveNever.LivenessProbe = &v1.Probe{}
	init42 := own(i1, v1.ContainerRestartPolicyNever, on42)
	initOnFailure := own(i1, v1.ContainerRestartPolicyOnFailure)
	dead := []*runtimeapi.PodSandboxStatus{sbx("sb1", 0, false, "", false)}

	tests := []struct {
		name   string
		pod    *v1.Pod
		status *cri.PodStatus
		probes podsync.Probes
		want   want
	}{
		{"new pod", newPod("", nil, app, app2), nil,
			podsync.Probes{}, want{killPod: true, create: true, nextInit: -1, apps: []int{0, 1}}},
		{"new pod with init", newPod("", []v1.Container{i1, i2}, app), status(nil),
			podsync.Probes{}, want{killPod: true, create: true, nextInit: 0, inits: []int{0}}},
		{"steady", newPod("", nil, app, app2), status(ready(), cst("c1", app, running, 0, 0), cst("c2", app2, running, 0, 0)),
			podsync.Probes{}, want{nextInit: -1}},
		{"one app never created", newPod("", nil, app, app2), status(ready(), cst("c1", app, running, 0, 0)),
			podsync.Probes{}, want{nextInit: -1, apps: []int{1}}},
		{"created not started is started again", newPod("", nil, app), status(ready(), cst("c1", app, created, 0, 0)),
			podsync.Probes{}, want{nextInit: -1, apps: []int{0}}},
		{"unknown state is killed and restarted", newPod(v1.RestartPolicyNever, nil, app), status(ready(), cst("c1", app, unknown, 0, 0)),
			podsync.Probes{}, want{nextInit: -1, kills: []kill{{"app", podsync.KillUnknownState}}, apps: []int{0}}},
		{"hash changed", newPod("", nil, changed, app2), status(ready(), cst("c1", app, running, 0, 0), cst("c2", app2, running, 0, 0)),
			podsync.Probes{}, want{nextInit: -1, kills: []kill{{"app", podsync.KillSpecChanged}}, apps: []int{0}}},
		{"hash changed under Never still restarts", newPod(v1.RestartPolicyNever, nil, changed), status(ready(), cst("c1", app, running, 0, 0)),
			podsync.Probes{}, want{nextInit: -1, kills: []kill{{"app", podsync.KillSpecChanged}}, apps: []int{0}}},
		{"liveness failed", newPod("", nil, withLiveness), status(ready(), cst("c1", withLiveness, running, 0, 0)),
			podsync.Probes{Liveness: failed("c1")}, want{nextInit: -1, kills: []kill{{"app", podsync.KillLivenessFailed}}, apps: []int{0}}},
		{"liveness failed under Never kills without restart", newPod(v1.RestartPolicyNever, nil, withLiveness, app2),
			status(ready(), cst("c1", withLiveness, running, 0, 0), cst("c2", app2, running, 0, 0)),
			podsync.Probes{Liveness: failed("c1")}, want{nextInit: -1, kills: []kill{{"app", podsync.KillLivenessFailed}}}},
		{"liveness result ignored without a probe", newPod("", nil, app), status(ready(), cst("c1", app, running, 0, 0)),
			podsync.Probes{Liveness: failed("c1")}, want{nextInit: -1}},
		{"startup failed", newPod(v1.RestartPolicyOnFailure, nil, withStartup), status(ready(), cst("c1", withStartup, running, 0, 0)),
			podsync.Probes{Startup: failed("c1")}, want{nextInit: -1, kills: []kill{{"app", podsync.KillStartupFailed}}, apps: []int{0}}},
		{"not in spec", newPod("", nil, app), status(ready(), cst("c1", app, running, 0, 0), cst("c9", ctr("old"), running, 0, 0)),
			podsync.Probes{}, want{nextInit: -1, kills: []kill{{"old", podsync.KillNotInSpec}}}},
		{"exited container not in spec is left alone", newPod("", nil, app), status(ready(), cst("c1", app, running, 0, 0), cst("c9", ctr("old"), exited, 0, 0)),
			podsync.Probes{}, want{nextInit: -1}},

		// Sandbox changes.
		{"sandbox died", newPod("", nil, app), status([]*runtimeapi.PodSandboxStatus{sbx("sb1", 0, false, "", false)}, cst("c1", app, exited, 137, 0)),
			podsync.Probes{}, want{killPod: true, create: true, attempt: 1, nextInit: -1, apps: []int{0}}},
		{"sandbox died, OnFailure skips succeeded", newPod(v1.RestartPolicyOnFailure, nil, app, app2),
			status([]*runtimeapi.PodSandboxStatus{sbx("sb1", 2, false, "", false)}, cst("c1", app, exited, 0, 0), cst("c2", app2, exited, 1, 0)),
			podsync.Probes{}, want{killPod: true, create: true, attempt: 3, nextInit: -1, apps: []int{1}}},
		{"sandbox died under Never after running: only kill", newPod(v1.RestartPolicyNever, nil, app),
			status([]*runtimeapi.PodSandboxStatus{sbx("sb1", 0, false, "", false)}, cst("c1", app, exited, 0, 0)),
			podsync.Probes{}, want{killPod: true, nextInit: -1}},
		{"sandbox died with init containers restarts init", newPod("", []v1.Container{i1}, app),
			status([]*runtimeapi.PodSandboxStatus{sbx("sb1", 0, false, "", false)}, cst("c1", app, running, 0, 0)),
			podsync.Probes{}, want{killPod: true, create: true, attempt: 1, nextInit: 0, inits: []int{0}}},
		{"sandbox died, OnFailure, all succeeded: stay down", newPod(v1.RestartPolicyOnFailure, nil, app),
			status([]*runtimeapi.PodSandboxStatus{sbx("sb1", 0, false, "", false)}, cst("c1", app, exited, 0, 0)),
			podsync.Probes{}, want{killPod: true, nextInit: -1}},
		{"new pod with a sidecar first", newPod("", []v1.Container{sc, i1}, app), nil,
			podsync.Probes{}, want{killPod: true, create: true, nextInit: -1, inits: []int{0}}},
		{"two ready sandboxes", newPod("", nil, app),
			status([]*runtimeapi.PodSandboxStatus{sbx("sb2", 1, true, "10.88.0.3", false), sbx("sb1", 0, true, "10.88.0.2", false)}, cst("c1", app, running, 0, 0)),
			podsync.Probes{}, want{killPod: true, create: true, attempt: 2, nextInit: -1, apps: []int{0}}},
		{"network mode changed", func() *v1.Pod { p := newPod("", nil, app); p.Spec.HostNetwork = true; return p }(),
			status(ready(), cst("c1", app, running, 0, 0)),
			podsync.Probes{}, want{killPod: true, create: true, attempt: 1, nextInit: -1, apps: []int{0}}},
		{"host network sandbox without IP is fine", func() *v1.Pod { p := newPod("", nil, app); p.Spec.HostNetwork = true; return p }(),
			status([]*runtimeapi.PodSandboxStatus{sbx("sb1", 0, true, "", true)}, cst("c1", app, running, 0, 0)),
			podsync.Probes{}, want{nextInit: -1}},
		{"pod network sandbox without IP", newPod("", nil, app),
			status([]*runtimeapi.PodSandboxStatus{sbx("sb1", 0, true, "", false)}, cst("c1", app, running, 0, 0)),
			podsync.Probes{}, want{killPod: true, create: true, attempt: 1, nextInit: -1, apps: []int{0}}},

		// Init containers.
		{"first init running: wait", newPod("", []v1.Container{i1, i2}, app), status(ready(), cst("i1", i1, running, 0, 0)),
			podsync.Probes{}, want{nextInit: -1}},
		{"first init done: next", newPod("", []v1.Container{i1, i2}, app), status(ready(), cst("i1", i1, exited, 0, 0)),
			podsync.Probes{}, want{nextInit: 1, inits: []int{1}}},
		{"all init done: apps", newPod("", []v1.Container{i1, i2}, app), status(ready(), cst("i2", i2, exited, 0, 0), cst("i1", i1, exited, 0, 0)),
			podsync.Probes{}, want{nextInit: -1, apps: []int{0}}},
		{"init failed, Always: restart it", newPod(v1.RestartPolicyAlways, []v1.Container{i1, i2}, app), status(ready(), cst("i1", i1, exited, 1, 0)),
			podsync.Probes{}, want{nextInit: 0, inits: []int{0}}},
		{"init failed, OnFailure: restart it", newPod(v1.RestartPolicyOnFailure, []v1.Container{i1, i2}, app), status(ready(), cst("i1", i1, exited, 1, 0)),
			podsync.Probes{}, want{nextInit: 0, inits: []int{0}}},
		{"init failed, Never: pod failed", newPod(v1.RestartPolicyNever, []v1.Container{i1, i2}, app), status(ready(), cst("i1", i1, exited, 1, 0)),
			podsync.Probes{}, want{killPod: true, nextInit: -1, initFailed: true}},
		{"init pruned after apps started: not rerun", newPod("", []v1.Container{i1}, app), status(ready(), cst("c1", app, running, 0, 0)),
			podsync.Probes{}, want{nextInit: -1}},

		// Sidecars.
		{"sidecar first, then waits", newPod("", []v1.Container{sc, i1}, app), status(ready()),
			podsync.Probes{}, want{nextInit: -1, inits: []int{0}}},
		{"sidecar running: next init", newPod("", []v1.Container{sc, i1}, app), status(ready(), cst("s1", sc, running, 0, 0)),
			podsync.Probes{}, want{nextInit: 1, inits: []int{1}}},
		{"sidecar running, startup probe pending: next init waits", newPod("", []v1.Container{withStartupSC, i1}, app),
			status(ready(), cst("s1", withStartupSC, running, 0, 0)),
			podsync.Probes{StartupSucceeded: func(string) bool { return false }}, want{nextInit: -1}},
		{"sidecar running, startup probe passed: next init", newPod("", []v1.Container{withStartupSC, i1}, app),
			status(ready(), cst("s1", withStartupSC, running, 0, 0)),
			podsync.Probes{StartupSucceeded: func(id string) bool { return id == "s1" }}, want{nextInit: 1, inits: []int{1}}},
		{"sidecar running, init done: apps", newPod("", []v1.Container{sc, i1}, app), status(ready(), cst("i1", i1, exited, 0, 0), cst("s1", sc, running, 0, 0)),
			podsync.Probes{}, want{nextInit: -1, apps: []int{0}}},
		{"sidecar exited after apps started: restart, even under Never", newPod(v1.RestartPolicyNever, []v1.Container{sc}, app),
			status(ready(), cst("c1", app, running, 0, 0), cst("s1", sc, exited, 1, 0)),
			podsync.Probes{}, want{nextInit: -1, inits: []int{0}}},
		{"apps done under Never: sidecar killed with the pod", newPod(v1.RestartPolicyNever, []v1.Container{sc}, app),
			status(ready(), cst("c1", app, exited, 0, 0), cst("s1", sc, running, 0, 0)),
			podsync.Probes{}, want{killPod: true, nextInit: -1}},
		{"sidecar image updated, apps running: the sidecar alone restarts", newPod("", []v1.Container{func() v1.Container { c := sc; c.Image = "busybox:2"; return c }()}, app),
			status(ready(), cst("c1", app, running, 0, 0), cst("s1", sc, running, 0, 0)),
			podsync.Probes{}, want{nextInit: -1, kills: []kill{{"sidecar", podsync.KillSpecChanged}}, inits: []int{0}}},
		{"sidecar image updated during init: restarted before the next init container", newPod("", []v1.Container{func() v1.Container { c := sc; c.Image = "busybox:2"; return c }(), i1}, app),
			status(ready(), cst("s1", sc, running, 0, 0)),
			podsync.Probes{}, want{nextInit: -1, kills: []kill{{"sidecar", podsync.KillSpecChanged}}, inits: []int{0}}},
		{"sidecar liveness failed", newPod("", []v1.Container{func() v1.Container { c := sc; c.LivenessProbe = &v1.Probe{}; return c }()}, app),
			status(ready(), cst("c1", app, running, 0, 0), cst("s1", func() v1.Container { c := sc; c.LivenessProbe = &v1.Probe{}; return c }(), running, 0, 0)),
			podsync.Probes{Liveness: failed("s1")}, want{nextInit: -1, kills: []kill{{"sidecar", podsync.KillLivenessFailed}}, inits: []int{0}}},

		// Container restart rules.
		{"Never pod, container Always, exit 1: restart", newPod(v1.RestartPolicyNever, nil, always),
			status(ready(), cst("c1", always, exited, 1, 0)), podsync.Probes{}, want{nextInit: -1, apps: []int{0}}},
		{"Never pod, container Always, exit 0: restart", newPod(v1.RestartPolicyNever, nil, always),
			status(ready(), cst("c1", always, exited, 0, 3)), podsync.Probes{}, want{nextInit: -1, apps: []int{0}}},
		{"Always pod, container Never, exit 1: stays down", newPod(v1.RestartPolicyAlways, nil, neverIn, app2),
			status(ready(), cst("c1", neverIn, exited, 1, 0), cst("c2", app2, running, 0, 0)), podsync.Probes{}, want{nextInit: -1}},
		{"rule on 42, exit 42: restart", newPod(v1.RestartPolicyNever, nil, retry42),
			status(ready(), cst("c1", retry42, exited, 42, 0)), podsync.Probes{}, want{nextInit: -1, apps: []int{0}}},
		{"rule on 42, exit 1: the pod is done", newPod(v1.RestartPolicyNever, nil, retry42),
			status(ready(), cst("c1", retry42, exited, 1, 1)), podsync.Probes{}, want{killPod: true, nextInit: -1}},
		{"rule on 42 in an Always pod, exit 1: its own Never keeps it down", newPod(v1.RestartPolicyAlways, nil, retry42, app2),
			status(ready(), cst("c1", retry42, exited, 1, 0), cst("c2", app2, running, 0, 0)), podsync.Probes{}, want{nextInit: -1}},
		{"liveness failed, Never pod, container Always: restarted", newPod(v1.RestartPolicyNever, nil, live),
			status(ready(), cst("c1", live, running, 0, 0)), podsync.Probes{Liveness: failed("c1")},
			want{nextInit: -1, kills: []kill{{"app", podsync.KillLivenessFailed}}, apps: []int{0}}},
		{"liveness failed, container Never with rules: rules need an exit code", newPod(v1.RestartPolicyAlways, nil, liveNever, app2),
			status(ready(), cst("c1", liveNever, running, 0, 0), cst("c2", app2, running, 0, 0)), podsync.Probes{Liveness: failed("c1")},
			want{nextInit: -1, kills: []kill{{"app", podsync.KillLivenessFailed}}}},
		{"init rule on 42, exit 42: restart it", newPod(v1.RestartPolicyNever, []v1.Container{init42}, app),
			status(ready(), cst("i1", init42, exited, 42, 0)), podsync.Probes{}, want{nextInit: 0, inits: []int{0}}},
		{"init rule on 42, exit 1: pod failed", newPod(v1.RestartPolicyNever, []v1.Container{init42}, app),
			status(ready(), cst("i1", init42, exited, 1, 0)), podsync.Probes{}, want{killPod: true, nextInit: -1, initFailed: true}},
		{"init OnFailure in a Never pod, exit 1: restart it", newPod(v1.RestartPolicyNever, []v1.Container{initOnFailure}, app),
			status(ready(), cst("i1", initOnFailure, exited, 1, 0)), podsync.Probes{}, want{nextInit: 0, inits: []int{0}}},
		{"sandbox died, Never pod, a container may restart: new sandbox", newPod(v1.RestartPolicyNever, nil, always, app2),
			status(dead, cst("c1", always, exited, 137, 0), cst("c2", app2, exited, 0, 0)), podsync.Probes{},
			want{killPod: true, create: true, attempt: 1, nextInit: -1, apps: []int{0}}},
		{"sandbox died, Never pod, rule matched the exit: new sandbox", newPod(v1.RestartPolicyNever, nil, retry42),
			status(dead, cst("c1", retry42, exited, 42, 0)), podsync.Probes{},
			want{killPod: true, create: true, attempt: 1, nextInit: -1, apps: []int{0}}},
		{"sandbox died, Never pod, rule did not match: stay down", newPod(v1.RestartPolicyNever, nil, retry42),
			status(dead, cst("c1", retry42, exited, 1, 0)), podsync.Probes{}, want{killPod: true, nextInit: -1}},

		// Adoption: a restarted agent sees what runs and starts nothing new.
		{"adoption after agent restart", newPod("", []v1.Container{i1, sc}, app, app2),
			status(ready(), cst("c2", app2, running, 0, 4), cst("c1", app, running, 0, 0), cst("s1", sc, running, 0, 1), cst("i1", i1, exited, 0, 0)),
			podsync.Probes{}, want{nextInit: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := podsync.ComputeActions(tt.pod, tt.status, tt.probes)
			assert.Equal(t, tt.want, summarize(got))
		})
	}
}

func TestComputeActionsKillMessages(t *testing.T) {
	app, other := ctr("app"), ctr("other")
	app.LivenessProbe = &v1.Probe{}
	tests := []struct {
		policy v1.RestartPolicy
		want   string
	}{
		{v1.RestartPolicyAlways, "Container app failed liveness probe, will be restarted"},
		{v1.RestartPolicyOnFailure, "Container app failed liveness probe, will be restarted"},
		{v1.RestartPolicyNever, "Container app failed liveness probe"},
	}
	for _, tt := range tests {
		t.Run(string(tt.policy), func(t *testing.T) {
			pod := newPod(tt.policy, nil, app, other)
			got := podsync.ComputeActions(pod, status(ready(), cst("c1", app, running, 0, 0), cst("c2", other, running, 0, 0)), podsync.Probes{Liveness: failed("c1")})
			if assert.Len(t, got.ContainersToKill, 1) {
				assert.Equal(t, tt.want, got.ContainersToKill[0].Message)
				assert.Equal(t, "c1", got.ContainersToKill[0].ID)
			}
		})
	}
}

func TestComputeActionsSteadyDoesNotAllocate(t *testing.T) {
	for _, n := range []int{1, 10, 50} {
		pod, st := steadyPod(n)
		allocs := testing.AllocsPerRun(100, func() { _ = podsync.ComputeActions(pod, st, podsync.Probes{}) })
		assert.Zero(t, allocs, "containers=%d", n)
		assert.True(t, func() bool { a := podsync.ComputeActions(pod, st, podsync.Probes{}); return a.Nothing() }())
	}
}

func steadyPod(n int) (*v1.Pod, *cri.PodStatus) {
	var apps []v1.Container
	var sts []*runtimeapi.ContainerStatus
	for i := range n {
		c := ctr("c" + itoa(int32(i)))
		apps = append(apps, c)
		sts = append(sts, cst("id"+itoa(int32(i)), c, running, 0, 0))
	}
	return newPod("", nil, apps...), status(ready(), sts...)
}
