package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kubeletkit/kubeletkit/cri"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// userHZ is the unit of the CPU times in /proc/PID/stat: USER_HZ, 100 on
// every Linux architecture Go supports.
const userHZ = 100

// procSample is what the harness reads of the kubelet's process.
type procSample struct {
	// CPU is the time the process ran, in user and kernel mode
	// (utime+stime).
	CPU time.Duration
	// RSS and HWM are its resident memory now and at its peak, in bytes
	// (VmRSS and VmHWM).
	RSS, HWM int64
}

// readProc reads pid's CPU time and resident memory.
func readProc(pid int) (procSample, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procSample{}, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procSample{}, err
	}
	var s procSample
	if s.CPU, err = parseStatCPU(stat); err != nil {
		return procSample{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	if s.RSS, s.HWM, err = parseStatusMemory(status); err != nil {
		return procSample{}, fmt.Errorf("/proc/%d/status: %w", pid, err)
	}
	return s, nil
}

// parseStatCPU returns utime+stime of a /proc/PID/stat line. The command
// name, in parentheses, may hold spaces and parentheses itself, so the
// fields are counted from the last ')': state is the first after it, utime
// and stime the 12th and 13th (fields 14 and 15 of proc(5)).
func parseStatCPU(stat []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("no ')' after the command name")
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		t, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += t
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// loadAverage is the machine's load average over the last minute (the first
// field of /proc/loadavg): what else ran beside the kubelet.
func loadAverage() (float64, error) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	return parseLoadAverage(data)
}

func parseLoadAverage(data []byte) (float64, error) {
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0, errors.New("/proc/loadavg is empty")
	}
	return strconv.ParseFloat(f[0], 64)
}

// parseStatusMemory returns VmRSS and VmHWM of /proc/PID/status, in bytes.
func parseStatusMemory(status []byte) (rss, hwm int64, err error) {
	found := 0
	for line := range strings.SplitSeq(string(status), "\n") {
		key, value, ok := strings.Cut(line, ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		kb, ok := strings.CutSuffix(strings.TrimSpace(value), " kB")
		if !ok {
			return 0, 0, fmt.Errorf("%s: %q is not in kB", key, value)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(kb), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%s: %w", key, err)
		}
		if key == "VmRSS" {
			rss = n << 10
		} else {
			hwm = n << 10
		}
		found++
	}
	if found != 2 {
		return 0, 0, errors.New("no VmRSS or VmHWM")
	}
	return rss, hwm, nil
}

// podList is the part of a /pods answer (a v1.PodList) the harness reads.
// Decoding only these fields costs a fraction of decoding whole pods, which
// matters when polling 500 of them on the kubelet's cores.
type podList struct {
	Items []struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Status struct {
			Phase      v1.PodPhase `json:"phase"`
			Reason     string      `json:"reason"`
			Message    string      `json:"message"`
			Conditions []struct {
				Type   v1.PodConditionType `json:"type"`
				Status v1.ConditionStatus  `json:"status"`
			} `json:"conditions"`
		} `json:"status"`
	} `json:"items"`
}

// podCounts is what one /pods answer says of the benchmark's pods.
type podCounts struct {
	// Listed, Running and Failed count the pods named bench-, and those
	// in phase Running and Failed.
	Listed, Running, Failed int
	// Failure says why the first Failed pod failed.
	Failure string
	// Extra is the phase of the pod bench-extra ("" when it is not
	// listed), ExtraReady whether its Ready condition is True.
	Extra      v1.PodPhase
	ExtraReady bool
}

// count reads an answer of /pods. A static pod is listed under its name,
// a dash and the node's name.
func count(data []byte) (podCounts, error) {
	var l podList
	if err := json.Unmarshal(data, &l); err != nil {
		return podCounts{}, err
	}
	var c podCounts
	for _, p := range l.Items {
		if !strings.HasPrefix(p.Metadata.Name, podPrefix) {
			continue
		}
		c.Listed++
		switch p.Status.Phase {
		case v1.PodRunning:
			c.Running++
		case v1.PodFailed:
			if c.Failed++; c.Failure == "" {
				c.Failure = fmt.Sprintf("%s: %s: %s", p.Metadata.Name, p.Status.Reason, p.Status.Message)
			}
		}
		if !strings.HasPrefix(p.Metadata.Name, extraName+"-") && p.Metadata.Name != extraName {
			continue
		}
		c.Extra = p.Status.Phase
		for _, cond := range p.Status.Conditions {
			if cond.Type == v1.PodReady {
				c.ExtraReady = cond.Status == v1.ConditionTrue
			}
		}
	}
	return c, nil
}

// maxPause is the longest a poller waits between the end of a sample and
// the start of the next.
const maxPause = 200 * time.Millisecond

// poller samples one source (/pods, or the runtime) no more often than its
// pace allows, and dates each sample.
type poller struct {
	// min is the shortest gap between two samples.
	min time.Duration
	// eager samples again as soon as min allows, whatever a sample costs:
	// for a short phase timed in milliseconds (one pod added, the pods
	// deleted), where a pause of three times the cost would be the error of
	// the figure.
	eager bool
	// last is when the previous sample was taken; cost what it took.
	last time.Time
	cost time.Duration
	// gap is the time between the last two samples: how late the last
	// one may date what it saw.
	gap time.Duration
}

// due is when the next sample may be taken: min after the last one, or
// three times its cost when that is longer, but never more than maxPause
// after it (a slow answer is more often a busy kubelet than a costly one);
// at once before the first; min after the last one when eager.
func (p *poller) due() time.Time {
	if p.last.IsZero() {
		return time.Time{}
	}
	if p.eager {
		return p.last.Add(p.min)
	}
	return p.last.Add(max(p.min, min(3*p.cost, maxPause)))
}

// sample takes one sample with f, which returns when it saw what it saw,
// and records the pace.
func (p *poller) sample(f func() (time.Time, error)) (time.Time, error) {
	if due := p.due(); !due.IsZero() {
		time.Sleep(time.Until(due))
	}
	start := time.Now()
	at, err := f()
	if !p.last.IsZero() {
		p.gap = at.Sub(p.last)
	}
	p.last, p.cost = at, time.Since(start)
	return at, err
}

// podsClient reads a kubelet's /pods.
type podsClient struct {
	client *http.Client
	url    string
}

// get returns the counts of one answer, dated when its body was read.
func (c *podsClient) get(ctx context.Context) (podCounts, time.Time, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return podCounts{}, time.Time{}, err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return podCounts{}, time.Now(), err
	}
	data, err := io.ReadAll(resp.Body)
	at := time.Now()
	resp.Body.Close()
	if err != nil {
		return podCounts{}, at, err
	}
	if resp.StatusCode != http.StatusOK {
		return podCounts{}, at, fmt.Errorf("GET %s: %s", c.url, resp.Status)
	}
	counts, err := count(data)
	if err != nil {
		return podCounts{}, at, fmt.Errorf("GET %s: %w", c.url, err)
	}
	return counts, at, nil
}

// runningContainers counts the runtime's running containers of the
// benchmark's pods, dated when the runtime answered.
func runningContainers(ctx context.Context, rt *cri.Client) (int, time.Time, error) {
	cs, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	at := time.Now()
	if err != nil {
		return 0, at, err
	}
	n := 0
	for _, c := range cs {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING &&
			strings.HasPrefix(c.GetLabels()[podNameLabel], podPrefix) {
			n++
		}
	}
	return n, at, nil
}
