package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubeletkit/kubeletkit/cri"
	"github.com/kubeletkit/kubeletkit/cri/fake"
)

// config is the script file: what fake.Options and the runtime's setters
// take, in a form a person writes.
type config struct {
	Images     []string        `json:"images"`
	Registry   []string        `json:"registry"`
	Containers []containerRule `json:"containers"`
	Exec       []execRule      `json:"exec"`
	Pulls      []pullRule      `json:"pulls"`
	Ports      []portRule      `json:"ports"`
	// CgroupDriver is what RuntimeConfig answers: cgroupfs (the default)
	// or systemd, as containerd 2.x reports its own; unimplemented
	// answers Unimplemented, as containerd 1.6 does (a kubelet then keeps
	// its configured cgroupDriver).
	CgroupDriver string `json:"cgroupDriver"`
}

type containerRule struct {
	Image         string   `json:"image"`
	Name          string   `json:"name"`
	Command       []string `json:"command"`
	CommandPrefix []string `json:"commandPrefix"`
	Outcome       string   `json:"outcome"`
	RunFor        duration `json:"runFor"`
	ExitCode      int32    `json:"exitCode"`
	StartError    string   `json:"startError"`
	OnSIGTERM     string   `json:"onSIGTERM"`
	ShutdownTime  duration `json:"shutdownTime"`
	Stdout        []string `json:"stdout"`
	Stderr        []string `json:"stderr"`
	LogEvery      duration `json:"logEvery"`
	LogRepeat     int      `json:"logRepeat"`
}

type execRule struct {
	Image         string   `json:"image"`
	Name          string   `json:"name"`
	Command       []string `json:"command"`
	CommandPrefix []string `json:"commandPrefix"`
	Stdout        string   `json:"stdout"`
	Stderr        string   `json:"stderr"`
	ExitCode      int32    `json:"exitCode"`
	Duration      duration `json:"duration"`
}

type pullRule struct {
	Image   string   `json:"image"`
	Latency duration `json:"latency"`
	Error   string   `json:"error"`
	ID      string   `json:"id"`
	User    string   `json:"user"`
}

// portRule says what answers a port-forward to a pod's port: a real TCP
// address the fake dials, or the fake's echo server.
type portRule struct {
	Image   string `json:"image"`
	Name    string `json:"name"`
	Port    int32  `json:"port"`
	Address string `json:"address"`
	Echo    bool   `json:"echo"`
}

// duration is a time.Duration written as a Go duration string.
type duration time.Duration

func (d *duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration such as \"10s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	if v < 0 {
		return fmt.Errorf("duration %q is negative", s)
	}
	*d = duration(v)
	return nil
}

// imageID is an image ID as containerd spells it.
var imageID = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

var (
	outcomes = map[string]fake.Outcome{
		"": fake.RunUntilStopped, "run": fake.RunUntilStopped, "exit": fake.Exit,
		"oomkill": fake.OOMKill, "failstart": fake.FailStart,
	}
	cgroupDrivers = map[string]runtimeapi.CgroupDriver{
		"": runtimeapi.CgroupDriver_CGROUPFS, "cgroupfs": runtimeapi.CgroupDriver_CGROUPFS, "systemd": runtimeapi.CgroupDriver_SYSTEMD,
		"unimplemented": -1,
	}
	sigtermResponses = map[string]fake.SIGTERMResponse{
		"": fake.DieOnSIGTERM, "die": fake.DieOnSIGTERM, "exit": fake.ExitOnSIGTERM, "ignore": fake.IgnoreSIGTERM,
	}
)

// parseConfig reads a script. Unknown fields and unknown values are errors
// that name the file and the rule.
func parseConfig(name string, data []byte) (*config, error) {
	var c config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if _, ok := cgroupDrivers[c.CgroupDriver]; !ok {
		return nil, fmt.Errorf("%s: unknown cgroupDriver %q (want cgroupfs, systemd or unimplemented)", name, c.CgroupDriver)
	}
	for i, r := range c.Containers {
		if _, ok := outcomes[r.Outcome]; !ok {
			return nil, fmt.Errorf("%s: containers[%d]: unknown outcome %q (want run, exit, oomkill or failstart)", name, i, r.Outcome)
		}
		if _, ok := sigtermResponses[r.OnSIGTERM]; !ok {
			return nil, fmt.Errorf("%s: containers[%d]: unknown onSIGTERM %q (want die, exit or ignore)", name, i, r.OnSIGTERM)
		}
		if r.LogRepeat < 0 || (r.LogRepeat > 0) != (r.LogEvery > 0) {
			return nil, fmt.Errorf("%s: containers[%d]: logEvery and logRepeat go together, both positive", name, i)
		}
	}
	for i, p := range c.Ports {
		if p.Port < 0 || p.Port > 65535 {
			return nil, fmt.Errorf("%s: ports[%d]: port %d is not between 0 (any) and 65535", name, i, p.Port)
		}
		if p.Echo && p.Address != "" {
			return nil, fmt.Errorf("%s: ports[%d]: address and echo exclude each other", name, i)
		}
		if p.Address != "" {
			if _, _, err := net.SplitHostPort(p.Address); err != nil {
				return nil, fmt.Errorf("%s: ports[%d]: address: %w", name, i, err)
			}
		}
	}
	for i, p := range c.Pulls {
		if p.Image == "" {
			return nil, fmt.Errorf("%s: pulls[%d]: image is required", name, i)
		}
		if p.ID != "" && !imageID.MatchString(p.ID) {
			return nil, fmt.Errorf("%s: pulls[%d]: id %q is not sha256: and 64 lower-case hex digits", name, i, p.ID)
		}
	}
	return &c, nil
}

// loadConfig reads the script at path, or the embedded default when path is
// empty.
func loadConfig(path string) (*config, error) {
	if path == "" {
		return parseConfig("default.yaml (embedded)", defaultConfig)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read script: %w", err)
	}
	return parseConfig(path, data)
}

// options turns the script into fake.Options.
func (c *config) options() fake.Options {
	opts := fake.Options{Images: c.Images, Registry: c.Registry}
	for _, r := range c.Containers {
		opts.Rules = append(opts.Rules, fake.Rule{
			Image: r.Image, Name: r.Name, Command: r.Command, CommandPrefix: r.CommandPrefix,
			Behavior: fake.Behavior{
				Outcome:      outcomes[r.Outcome],
				RunFor:       time.Duration(r.RunFor),
				ExitCode:     r.ExitCode,
				StartError:   r.StartError,
				OnSIGTERM:    sigtermResponses[r.OnSIGTERM],
				ShutdownTime: time.Duration(r.ShutdownTime),
				Stdout:       r.Stdout,
				Stderr:       r.Stderr,
				LogEvery:     time.Duration(r.LogEvery),
				LogRepeat:    r.LogRepeat,
			},
		})
	}
	for _, r := range c.Ports {
		pr := fake.PortRule{Image: r.Image, Name: r.Name, Port: r.Port, Address: r.Address}
		if r.Echo {
			pr.Handler = fake.EchoPort
		}
		opts.PortRules = append(opts.PortRules, pr)
	}
	for _, r := range c.Exec {
		opts.ExecRules = append(opts.ExecRules, fake.ExecRule{
			Image: r.Image, Name: r.Name, Command: r.Command, CommandPrefix: r.CommandPrefix,
			Stdout: r.Stdout, Stderr: r.Stderr, ExitCode: r.ExitCode, Duration: time.Duration(r.Duration),
		})
	}
	return opts
}

// apply sets what fake.Options cannot carry: pull behaviour (latency,
// failure, and the image the registry serves: ID and user) and the cgroup
// driver RuntimeConfig reports (or Unimplemented).
func (c *config) apply(rt *fake.Runtime) {
	if d := cgroupDrivers[c.CgroupDriver]; d < 0 {
		rt.InjectFault(fake.RuntimeConfig, fake.Fault{Err: cri.ErrUnimplemented})
	} else {
		rt.SetCgroupDriver(d)
	}
	for _, p := range c.Pulls {
		var err error
		if p.Error != "" {
			err = errors.New(p.Error)
		}
		rt.SetPullBehavior(p.Image, fake.PullBehavior{Latency: time.Duration(p.Latency), Err: err, ID: p.ID, User: p.User})
	}
}
