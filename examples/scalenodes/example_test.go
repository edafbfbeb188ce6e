package main

import (
	"fmt"
	"time"
)

// The load's report of pod-startup latencies: nearest-rank percentiles.
func Example_percentiles() {
	fmt.Println(percentiles([]time.Duration{120 * time.Millisecond, 80 * time.Millisecond, 95 * time.Millisecond, 2 * time.Second}))
	// Output:
	// p50 95ms, p90 2s, p99 2s (min 80ms, max 2s, n=4)
}
