// A Go service with many goroutines for tests/bench/goroutines_read.sh:
// -n goroutines parked on a channel receive, and the main goroutine doing
// fixed units of CPU work, printing "units N" (work units done) every
// 500 ms, so that a reader of its goroutines can be seen to slow it or
// not. On SIGUSR1 it takes Go's own goroutine profile (which stops the
// world) and prints "goprofile_ms X". Prints "ready pid=P" once all
// goroutines are parked.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"
)

var sink uint64

//go:noinline
func unit() {
	x := sink
	for i := 0; i < 200000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink = x
}

//go:noinline
func park(c chan int) { <-c }

func main() {
	n := flag.Int("n", 100000, "goroutines parked")
	flag.Parse()
	c := make(chan int)
	for i := 0; i < *n; i++ {
		go park(c)
	}
	for runtime.NumGoroutine() < *n {
		time.Sleep(10 * time.Millisecond)
	}
	usr := make(chan os.Signal, 1)
	signal.Notify(usr, syscall.SIGUSR1)
	go func() {
		for range usr {
			t := time.Now()
			pprof.Lookup("goroutine").WriteTo(io.Discard, 0)
			fmt.Printf("goprofile_ms %.1f\n", float64(time.Since(t).Microseconds())/1000)
		}
	}()
	fmt.Printf("ready pid=%d\n", os.Getpid())
	units, last := 0, time.Now()
	for {
		unit()
		units++
		if time.Since(last) >= 500*time.Millisecond {
			fmt.Printf("units %d\n", units)
			units, last = 0, time.Now()
		}
	}
}
