// A named Go call chain for go_fp_whole.sh: main.main -> main.collectRows
// -> main.scoreRow -> a busy loop, for as many seconds as the first
// argument says.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

//go:noinline
func scoreRow(i uint32) uint32 {
	h := i
	for k := uint32(0); k < 2000; k++ {
		h = (h * 16777619) ^ k
	}
	return h
}

//go:noinline
func collectRows(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += int(scoreRow(uint32(i)) & 0xff)
	}
	return s
}

func main() {
	secs := 5.0
	if len(os.Args) > 1 {
		secs, _ = strconv.ParseFloat(os.Args[1], 64)
	}
	fmt.Printf("pid=%d\n", os.Getpid())
	end := time.Now().Add(time.Duration(secs * float64(time.Second)))
	total := 0
	for time.Now().Before(end) {
		total += collectRows(200)
	}
	fmt.Printf("rows=%d\n", total)
}
