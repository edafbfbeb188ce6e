package fake

import (
	"slices"
	"strings"
	"time"
)

// Outcome is how a started container ends when nothing stops it.
type Outcome int

const (
	// RunUntilStopped: the container runs until StopContainer,
	// StopPodSandbox, RemoveContainer or ExitContainer. The default.
	RunUntilStopped Outcome = iota
	// Exit: the container exits by itself with Behavior.ExitCode after
	// Behavior.RunFor (0: at once, within StartContainer). Reason
	// "Completed" for code 0, "Error" otherwise, as containerd.
	Exit
	// OOMKill: the container is OOM-killed after Behavior.RunFor: exit code
	// 137, reason "OOMKilled".
	OOMKill
	// FailStart: StartContainer fails with Behavior.StartError and the
	// container ends exited with code 128 and reason "StartError", as
	// containerd reports a process that could not be started (an
	// executable that does not exist, say).
	FailStart
)

// SIGTERMResponse is how a running container's process answers the SIGTERM
// of StopContainer.
type SIGTERMResponse int

const (
	// DieOnSIGTERM: the process dies of the signal at once: exit code 143
	// (128+15), reason "Error". The default, since that is what a runtime
	// reports for a process that SIGTERM killed.
	DieOnSIGTERM SIGTERMResponse = iota
	// ExitOnSIGTERM: the process handles the signal and exits cleanly
	// (code 0, reason "Completed") after Behavior.ShutdownTime; if that is
	// longer than the stop timeout, it is killed at the timeout instead
	// (137).
	ExitOnSIGTERM
	// IgnoreSIGTERM: the process ignores the signal (a shell or sleep
	// running as PID 1 does), so StopContainer waits its whole timeout on
	// the clock and kills it: exit code 137, reason "Error".
	IgnoreSIGTERM
)

// Behavior is what a container does once started.
type Behavior struct {
	// Outcome is how the container ends by itself.
	Outcome Outcome
	// RunFor is how long the container runs before Exit or OOMKill, on the
	// runtime's clock.
	RunFor time.Duration
	// ExitCode is the exit code of Exit.
	ExitCode int32
	// StartError is the message of FailStart; empty means an
	// "executable file not found" message naming the container's command.
	StartError string
	// OnSIGTERM is how the container answers StopContainer.
	OnSIGTERM SIGTERMResponse
	// ShutdownTime is how long an ExitOnSIGTERM container takes to exit
	// after SIGTERM.
	ShutdownTime time.Duration
	// Stdout and Stderr are lines the container writes to its log when it
	// starts: the stdout lines, then the stderr lines.
	Stdout, Stderr []string
	// LogEvery and LogRepeat make the container write its Stdout and
	// Stderr lines again every LogEvery after it starts, LogRepeat more
	// times, for as long as it runs (a loop that logs, like
	// "while true; do echo hi; sleep 1; done" for its first LogRepeat
	// rounds). Such a container keeps its log file open, as a runtime's
	// log writer does: after the file is renamed (log rotation), lines keep
	// going to the renamed file until ReopenContainerLog. Each repetition
	// is one timer on the runtime's clock, created when the container
	// starts. Both must be positive to repeat.
	LogEvery  time.Duration
	LogRepeat int
}

// repeatsLog reports whether b writes its lines periodically.
func (b Behavior) repeatsLog() bool {
	return b.LogEvery > 0 && b.LogRepeat > 0 && len(b.Stdout)+len(b.Stderr) > 0
}

// Rule scripts the containers it matches. Every field that is set must
// match; a Rule with no matcher matches every container.
type Rule struct {
	// Image matches the container's image by reference or by image ID. A
	// reference is compared normalized (busybox is
	// docker.io/library/busybox:latest, see NormalizeImage), and one
	// without a tag or digest matches every tag of its repository: "busybox"
	// matches busybox:1.36 too, "busybox:1.36" only that tag.
	Image string
	// Name matches the container's metadata name.
	Name string
	// Command matches when the container's argv (its config's Command
	// followed by its Args) equals it exactly. The fake has no image
	// config, so an empty Command and Args is an empty argv, not the
	// image's ENTRYPOINT and CMD.
	Command []string
	// CommandPrefix matches when the container's argv starts with it.
	CommandPrefix []string
	// Behavior is what a matching container does.
	Behavior Behavior
}

// ExecRule scripts the commands it matches, wherever they run: ExecSync, a
// streaming exec, each command of an "sh -c" script or of a shell reading
// its stdin (see the package doc). Image and Name match the container as in
// Rule; Command and CommandPrefix match the command's argv.
type ExecRule struct {
	// Image matches the container's image as Rule.Image does.
	Image string
	// Name matches the container's metadata name.
	Name string
	// Command matches an exec'd argv equal to it.
	Command []string
	// CommandPrefix matches an exec'd argv that starts with it.
	CommandPrefix []string
	// Stdout, Stderr and ExitCode are the command's result.
	Stdout, Stderr string
	// ExitCode is the command's exit code; non-zero is not an error.
	ExitCode int32
	// Duration is how long the command runs, on the runtime's clock, after
	// writing its output. If an ExecSync's commands run longer than its
	// timeout, it fails with an error wrapping cri.ErrTimeout once the
	// timeout has passed.
	Duration time.Duration
}

// imageMatcher matches a container's image against a rule's Image.
type imageMatcher struct {
	raw  string // as written; "" matches any
	norm string // normalized reference
	repo string // repository, when the rule names neither tag nor digest
}

func newImageMatcher(ref string) imageMatcher {
	if ref == "" {
		return imageMatcher{}
	}
	m := imageMatcher{raw: ref, norm: NormalizeImage(ref)}
	if !hasTagOrDigest(ref) {
		m.repo = repository(m.norm)
	}
	return m
}

// match reports whether an image known by these names (normalized
// references) and this ID matches.
func (m imageMatcher) match(names []string, id string) bool {
	if m.raw == "" || m.raw == id || "sha256:"+m.raw == id {
		return true
	}
	for _, n := range names {
		if n == m.norm || (m.repo != "" && repository(n) == m.repo) {
			return true
		}
	}
	return false
}

type argvMatcher struct {
	exact, prefix []string
}

func (m argvMatcher) match(argv []string) bool {
	if m.exact != nil && !slices.Equal(argv, m.exact) {
		return false
	}
	return len(argv) >= len(m.prefix) && slices.Equal(argv[:len(m.prefix)], m.prefix)
}

type rule struct {
	image    imageMatcher
	name     string
	argv     argvMatcher
	behavior Behavior
}

type execRule struct {
	image imageMatcher
	name  string
	argv  argvMatcher
	rule  ExecRule
}

func compileRules(rules []Rule) []rule {
	out := make([]rule, 0, len(rules))
	for _, r := range rules {
		b := r.Behavior
		b.Stdout, b.Stderr = slices.Clone(b.Stdout), slices.Clone(b.Stderr)
		out = append(out, rule{
			image:    newImageMatcher(r.Image),
			name:     r.Name,
			argv:     argvMatcher{exact: slices.Clone(r.Command), prefix: slices.Clone(r.CommandPrefix)},
			behavior: b,
		})
	}
	return out
}

func compileExecRules(rules []ExecRule) []execRule {
	out := make([]execRule, 0, len(rules))
	for _, r := range rules {
		out = append(out, execRule{
			image: newImageMatcher(r.Image),
			name:  r.Name,
			argv:  argvMatcher{exact: slices.Clone(r.Command), prefix: slices.Clone(r.CommandPrefix)},
			rule:  r,
		})
	}
	return out
}

// SetRules replaces the container rules. They apply to containers started
// from then on; running containers keep the behaviour they started with.
func (r *Runtime) SetRules(rules []Rule) {
	compiled := compileRules(rules)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rules = compiled
}

// SetExecRules replaces the exec rules.
func (r *Runtime) SetExecRules(rules []ExecRule) {
	compiled := compileExecRules(rules)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.execRules = compiled
}

// behaviorLocked returns the behaviour of the first rule matching c.
func (r *Runtime) behaviorLocked(c *container) Behavior {
	argv := c.argv()
	for _, rl := range r.rules {
		if (rl.name == "" || rl.name == c.config.GetMetadata().GetName()) &&
			rl.image.match(c.imageNames, c.imageID) && rl.argv.match(argv) {
			return rl.behavior
		}
	}
	return Behavior{Stdout: echoed(argv)}
}

// echoed is what the echo commands at the start of a container's command
// print, as lines: "echo serving" and "sh -c 'echo a; echo b && exec
// sleep 3600'" write their lines to the log, the way a real container's
// first words reach kubectl logs, before it runs until stopped as a
// container no rule matches does. It stops at the first command that is
// not echo (or true), and reads nothing in a script the fake does not
// interpret.
func echoed(argv []string) []string {
	steps := []step{{argv: argv}}
	if len(argv) == 3 && isShell(argv[0]) && argv[1] == "-c" {
		var err error
		if steps, err = parseScript(argv[2]); err != nil {
			return nil
		}
	}
	var lines []string
	for _, st := range steps {
		if len(st.argv) == 0 || st.op == "||" {
			break
		}
		switch base(st.argv[0]) {
		case "true":
			continue
		case "echo":
		default:
			return lines
		}
		args := st.argv[1:]
		if len(args) > 0 && args[0] == "-n" {
			args = args[1:]
		}
		lines = append(lines, strings.Join(args, " "))
	}
	return lines
}

// execRuleLocked returns the first exec rule matching cmd in c.
func (r *Runtime) execRuleLocked(c *container, cmd []string) (rule ExecRule, scripted bool) {
	for _, er := range r.execRules {
		if (er.name == "" || er.name == c.config.GetMetadata().GetName()) &&
			er.image.match(c.imageNames, c.imageID) && er.argv.match(cmd) {
			return er.rule, true
		}
	}
	return ExecRule{}, false
}

func isShell(s string) bool {
	switch base(s) {
	case "sh", "bash", "ash", "dash":
		return true
	}
	return false
}

func base(path string) string {
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		return path[i+1:]
	}
	return path
}
