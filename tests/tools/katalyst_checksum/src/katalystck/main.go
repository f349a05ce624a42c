// katalyst_checksum: a test-only reference for netqos's C++ reproduction of Katalyst's checkpoint
// checksum. It decodes a network_plugin_state file into mirrors of Katalyst's Go types, exactly
// as Katalyst's restore does, and prints the checksum Katalyst computes over it (the kubelet's
// checkpoint checksum: FNV-1a 32 over a go-spew rendering of the checkpoint pointer, with the
// Checksum field zeroed).
//
//	katalyst_checksum [-layout v0.5.3|head] [-spew] [-sign] [-verify] FILE
//
// -spew prints the rendering instead of the checksum; -sign rewrites FILE the way Katalyst
// writes a checkpoint (json.Marshal of the decoded value with its checksum set); -verify checks
// the stored checksum as Katalyst's restore does and prints what Katalyst keeps (json.Marshal of
// the decoded value).
// Exit status: 0 on success, 2 when the file does not decode (Katalyst would refuse it too),
// 3 when -verify finds a checksum mismatch (Katalyst: ErrCorruptCheckpoint).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"io/ioutil"
	"os"

	"github.com/davecgh/go-spew/spew"

	"katalystck/checksum"
	headstate "katalystck/head/state"
	v053state "katalystck/v053/state"
)

// The kubelet's hashing printer (pkg/util/hash in kubernetes v1.24).
var printer = spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true}

func render(v interface{}) string { return printer.Sprintf("%#v", v) }

func fnv32a(s string) checksum.Checksum {
	h := fnv.New32a()
	h.Write([]byte(s))
	return checksum.Checksum(h.Sum32())
}

// checkpoint abstracts over the two layouts: the field to zero and the value to hash.
type checkpoint struct {
	value interface{} // the *NetworkPluginCheckpoint, hashed as a pointer like the kubelet does
	sum   *checksum.Checksum
}

func decode(layout string, blob []byte) (checkpoint, error) {
	switch layout {
	case "v0.5.3":
		cp := v053state.New()
		err := json.Unmarshal(blob, cp)
		return checkpoint{cp, &cp.Checksum}, err
	case "head":
		cp := headstate.New()
		err := json.Unmarshal(blob, cp)
		return checkpoint{cp, &cp.Checksum}, err
	}
	return checkpoint{}, fmt.Errorf("unknown layout %q (want v0.5.3 or head)", layout)
}

func main() {
	layout := flag.String("layout", "v0.5.3", "Go type layout: v0.5.3 or head")
	showSpew := flag.Bool("spew", false, "print the go-spew rendering instead of the checksum")
	sign := flag.Bool("sign", false, "rewrite FILE as Katalyst would write it, checksum included")
	verify := flag.Bool("verify", false, "check the stored checksum and print the decoded checkpoint")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: katalyst_checksum [-layout v0.5.3|head] [-spew] [-sign] [-verify] FILE")
		os.Exit(1)
	}
	path := flag.Arg(0)
	blob, err := ioutil.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cp, err := decode(*layout, blob)
	if err != nil {
		fmt.Fprintln(os.Stderr, "decode:", err)
		os.Exit(2)
	}
	stored := *cp.sum
	*cp.sum = 0
	text := render(cp.value)
	sum := fnv32a(text)
	switch {
	case *verify:
		if stored != sum {
			fmt.Fprintf(os.Stderr, "checksum mismatch: stored %d, computed %d\n", uint64(stored), uint64(sum))
			os.Exit(3)
		}
		*cp.sum = stored
		out, err := json.Marshal(cp.value)
		if err != nil {
			fmt.Fprintln(os.Stderr, "encode:", err)
			os.Exit(1)
		}
		fmt.Println(string(out))
	case *sign:
		*cp.sum = sum
		out, err := json.Marshal(cp.value)
		if err != nil {
			fmt.Fprintln(os.Stderr, "encode:", err)
			os.Exit(1)
		}
		if err := ioutil.WriteFile(path, out, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println(uint64(sum))
	case *showSpew:
		fmt.Print(text)
	default:
		fmt.Println(uint64(sum))
	}
}
