// A Go program that waits in system calls under a pprof label: one
// goroutine sleeps 2 ms at a time in nanosleep (the thread blocks with
// the goroutine on it) under endpoint=/sleep, another burns CPU under
// endpoint=/burn. It prints its pid, then runs for the seconds given
// (-seconds, 30 by default).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"syscall"
	"time"
)

var sink uint64

//go:noinline
func sleepLoop(until time.Time) {
	ts := syscall.Timespec{Nsec: 2000000}
	for time.Now().Before(until) {
		syscall.Nanosleep(&ts, nil)
	}
}

//go:noinline
func burnLoop(until time.Time) {
	x := sink
	for time.Now().Before(until) {
		for i := 0; i < 1000000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink = x
}

func main() {
	seconds := flag.Int("seconds", 30, "how long to run")
	flag.Parse()
	until := time.Now().Add(time.Duration(*seconds) * time.Second)
	fmt.Printf("pid=%d\n", os.Getpid())
	done := make(chan bool)
	go pprof.Do(context.Background(), pprof.Labels("endpoint", "/sleep"),
		func(context.Context) { sleepLoop(until); done <- true })
	pprof.Do(context.Background(), pprof.Labels("endpoint", "/burn"),
		func(context.Context) { burnLoop(until) })
	<-done
}
