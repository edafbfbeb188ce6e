package localstate_test

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubeletkit/kubeletkit/localstate"
)

// crashChildEnv makes the test binary a child of TestCrashSafety: it writes
// generations to the store named by the variable until it is killed.
const crashChildEnv = "KK_LOCALSTATE_CRASH_CHILD"

const (
	crashKeys      = 50
	crashValueSize = 4096 // 50 keys of 4 KiB: each write spans many pages
)

func crashValue(gen int) []byte {
	v := bytes.Repeat([]byte{byte(gen)}, crashValueSize)
	copy(v, fmt.Sprintf("gen=%d;", gen))
	return v
}

// crashGeneration returns the generation every key of the store holds, or
// an error if the keys disagree, one is missing or torn.
func crashGeneration(s localstate.Store) (int, error) {
	vals, err := s.List(localstate.Pods)
	if err != nil {
		return 0, err
	}
	if len(vals) == 0 {
		return 0, nil
	}
	if len(vals) != crashKeys {
		return 0, fmt.Errorf("%d keys, want %d", len(vals), crashKeys)
	}
	gen := -1
	for k, v := range vals {
		head, _, ok := strings.Cut(string(v[:min(len(v), 32)]), ";")
		if !ok || !strings.HasPrefix(head, "gen=") {
			return 0, fmt.Errorf("key %s: torn value %q", k, v[:min(len(v), 32)])
		}
		g, err := strconv.Atoi(strings.TrimPrefix(head, "gen="))
		if err != nil {
			return 0, fmt.Errorf("key %s: %w", k, err)
		}
		if !bytes.Equal(v, crashValue(g)) {
			return 0, fmt.Errorf("key %s: value of generation %d is torn", k, g)
		}
		if gen >= 0 && g != gen {
			return 0, fmt.Errorf("key %s holds generation %d, another %d: a write half applied", k, g, gen)
		}
		gen = g
	}
	return gen, nil
}

// crashChild is the child's main: it writes generation after generation,
// each as one Write of every key, printing "begin n" before and "done n"
// after each.
func crashChild() {
	s, err := localstate.OpenBolt(os.Getenv(crashChildEnv), localstate.BoltOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	gen, err := crashGeneration(s)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	for n := gen + 1; ; n++ {
		var b localstate.Batch
		for i := range crashKeys {
			b.Puts = append(b.Puts, localstate.Entry{Key: localstate.Key{Kind: localstate.Pods, Key: fmt.Sprintf("k%02d", i)}, Value: crashValue(n % 256)})
		}
		fmt.Fprintf(os.Stdout, "begin %d\n", n%256)
		if err := s.Write(b); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(4)
		}
		fmt.Fprintf(os.Stdout, "done %d\n", n%256)
	}
}

// TestCrashSafety kills (SIGKILL) a child process writing to a store at a
// random point, 50 times, and checks each time that the store opens and
// holds the generation the child last finished or the one it was writing,
// whole.
func TestCrashSafety(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 50 processes")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := t.TempDir() + "/localstate.db"
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 25))
	midWrite := 0
	for round := range 50 {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		// Let the child finish a random number of writes, then kill it
		// after a random pause: most kills land inside a write (its
		// pages, its fsync, its meta page), some between two.
		want := 1 + rng.IntN(4)
		done, last, lastDone := 0, "", -1
		for done < want {
			l, ok := <-lines
			if !ok {
				t.Fatalf("round %d: the child ended: %s", round, stderr.String())
			}
			last = l
			if g, ok := strings.CutPrefix(l, "done "); ok {
				lastDone, _ = strconv.Atoi(g)
				done++
			}
		}
		time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond) // a random kill point, not a wait
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for l := range lines { // what the child printed before it died
			last = l
			if g, ok := strings.CutPrefix(l, "done "); ok {
				lastDone, _ = strconv.Atoi(g)
			}
		}
		_ = cmd.Wait()
		inFlight := -1
		if g, ok := strings.CutPrefix(last, "begin "); ok {
			inFlight, _ = strconv.Atoi(g)
			midWrite++
		}

		s, err := localstate.OpenBolt(path, localstate.BoltOptions{})
		if err != nil {
			t.Fatalf("round %d: the store does not open after the kill: %v", round, err)
		}
		gen, err := crashGeneration(s)
		_ = s.Close()
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if gen != lastDone && gen != inFlight {
			t.Fatalf("round %d: the store holds generation %d; the child finished %d and was writing %d", round, gen, lastDone, inFlight)
		}
	}
	t.Logf("50 kills, %d of them while a write was under way", midWrite)
	if midWrite == 0 {
		t.Fatal("no kill landed while a write was under way: the test proved nothing")
	}
}
