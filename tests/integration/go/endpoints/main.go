// A small Go service that knows nothing of any profiler: two endpoints
// served under pprof labels ("endpoint" = "/a" and "/b"), /b doing three
// times the work of /a (a 25/75 split of its CPU), and five goroutines
// parked on a channel that never receives. It prints its pid, then runs
// for the seconds given (-seconds, 60 by default).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

var sink uint64

// work burns n units of CPU.
//
//go:noinline
func work(n int) {
	x := sink
	for i := 0; i < n*2000000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink = x
}

//go:noinline
func handleA() { work(1) }

//go:noinline
func handleB() { work(3) }

var jobs = make(chan int)

//go:noinline
func waitForJob(id int) {
	for j := range jobs {
		_ = j + id
	}
}

func spawnWaiters(n int) {
	for i := 0; i < n; i++ {
		go waitForJob(i)
	}
}

func serve(ctx context.Context, until time.Time) {
	for time.Now().Before(until) {
		pprof.Do(ctx, pprof.Labels("endpoint", "/a"), func(context.Context) { handleA() })
		pprof.Do(ctx, pprof.Labels("endpoint", "/b"), func(context.Context) { handleB() })
	}
}

func main() {
	seconds := flag.Int("seconds", 60, "how long to serve")
	flag.Parse()
	spawnWaiters(5)
	fmt.Printf("pid=%d\n", os.Getpid())
	serve(context.Background(), time.Now().Add(time.Duration(*seconds)*time.Second))
}
