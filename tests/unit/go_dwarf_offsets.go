// Prints, from a Go program's DWARF, what the recorder's table of Go
// runtime layouts says for its release (recorder/tracking/golabels.c):
// the version, the offsets of g.m, m.curg and g.labels, whether pprof
// labels are a map (1) or a struct holding a slice (2), and for a map the
// header's B and buckets offsets and the size of a map[string]string
// bucket. For tests/unit/test_golabels.c.
package main

import (
	"debug/buildinfo"
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"os"
)

func main() {
	f, err := elf.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	d, err := f.DWARF()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bi, err := buildinfo.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out := map[string]int64{}
	members := map[string]map[string]string{
		"runtime.g":    {"m": "m", "labels": "labels"},
		"runtime.m":    {"curg": "curg"},
		"runtime.hmap": {"B": "hmap_B", "buckets": "hmap_buckets"},
	}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		if name == "runtime/pprof.labelMap" {
			if e.Tag == dwarf.TagStructType {
				out["kind"] = 2
			} else {
				out["kind"] = 1
			}
		}
		if name == "bucket<string,string>" && e.Tag == dwarf.TagStructType {
			out["bucket"], _ = e.Val(dwarf.AttrByteSize).(int64)
		}
		want, ok := members[name]
		if e.Tag != dwarf.TagStructType || !ok {
			if e.Children && e.Tag != dwarf.TagCompileUnit {
				r.SkipChildren()
			}
			continue
		}
		for {
			c, _ := r.Next()
			if c == nil || c.Tag == 0 {
				break
			}
			n, _ := c.Val(dwarf.AttrName).(string)
			if key, ok := want[n]; ok {
				out[key], _ = c.Val(dwarf.AttrDataMemberLoc).(int64)
			}
		}
	}
	fmt.Printf("%s", bi.GoVersion)
	for _, k := range []string{"m", "curg", "labels", "kind", "hmap_B", "hmap_buckets", "bucket"} {
		fmt.Printf(" %s=%d", k, out[k])
	}
	fmt.Println()
}
