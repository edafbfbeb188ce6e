package golden_test

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kubeletkit/kubeletkit/internal/golden"
)

// newCounter is a harness for golden.Run: a test passes
//
//	func(*testing.T) func(golden.Case) []string { return newCounter() }
//
// and Run calls the returned function for each case of a transcript in
// testdata/, such as
//
//	add 2
//	----
//	total 2
//
// comparing the lines it returns with those after "----". This harness keeps
// a running total across the cases of one transcript; "echo" prints its input.
func newCounter() func(golden.Case) []string {
	total := 0
	return func(c golden.Case) []string {
		switch f := c.Fields(); f[0] {
		case "add":
			n, err := strconv.Atoi(f[1])
			if err != nil {
				return []string{"error: " + err.Error()}
			}
			total += n
			return golden.Lines(fmt.Sprint("total ", total))
		case "echo":
			return golden.Lines(strings.Join(c.Input, "\n"))
		default:
			return []string{"unknown command " + f[0]}
		}
	}
}

// A harness is a function from a case to its output lines. Run feeds it the
// cases of each transcript in order; here they are fed by hand to show what
// it returns.
func Example() {
	run := newCounter()
	for _, c := range []golden.Case{
		{Command: "add 2"},
		{Command: "add 40"},
		{Command: "echo", Input: []string{"first line", "second line"}},
		{Command: "echo"}, // no input: no output lines at all
	} {
		fmt.Printf("%s -> %q\n", c.Command, run(c))
	}
	// Output:
	// add 2 -> ["total 2"]
	// add 40 -> ["total 42"]
	// echo -> ["first line" "second line"]
	// echo -> []
}
