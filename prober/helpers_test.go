package prober_test

import "runtime"

func runtimeGosched() { runtime.Gosched() }
