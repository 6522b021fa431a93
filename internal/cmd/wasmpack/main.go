// Command wasmpack rewrites a WebAssembly module's data section so that it
// compresses better (package internal/wasmpack): make wasm runs it on the
// page's model.
//
//	wasmpack [-gap N] -o OUT IN
//
// OUT is written whole or not at all.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/connlab/connlab/internal/wasmpack"
)

func main() {
	gap := flag.Int("gap", wasmpack.DefaultGap, "merge data segments at most `N` bytes apart, writing the gap as zeros")
	out := flag.String("o", "", "write the packed module to `FILE`")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: wasmpack [-gap N] -o OUT IN\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 || *out == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *out, *gap); err != nil {
		fmt.Fprintln(os.Stderr, "wasmpack:", err)
		os.Exit(1)
	}
}

func run(in, out string, gap int) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	packed, err := wasmpack.Pack(b, gap)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), ".wasmpack-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(packed); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}
