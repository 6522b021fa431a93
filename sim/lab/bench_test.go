package lab

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// manyBlocks is a lab of n one-request blocks, each with an expectation
// that reads the block before it, so checking is the work that grows.
func manyBlocks(n int) []byte {
	var b strings.Builder
	b.WriteString("+++\ntitle = \"many blocks\"\n+++\n")
	for i := range n {
		fmt.Fprintf(&b, "\n```sim {id=\"b%d\"}\nrequests = 1\ntls = \"none\"\n", i)
		if i > 0 {
			fmt.Fprintf(&b, "expect = [\"connects == 1\", \"b%d.connects == connects\"]\n", i-1)
		} else {
			b.WriteString("expect = [\"connects == 1\"]\n")
		}
		b.WriteString("```\n")
	}
	return []byte(b.String())
}

// manyVariants is a lab of one block with n one-request variants, each
// with an expectation of its own.
func manyVariants(n int) []byte {
	var b strings.Builder
	b.WriteString("```sim {id=\"wide\"}\nrequests = 1\ntls = \"none\"\nexpect = [\n")
	for i := range n {
		fmt.Fprintf(&b, "  \"v%d.connects == 1\",\n", i)
	}
	b.WriteString("]\n")
	for i := range n {
		fmt.Fprintf(&b, "[[variant]]\nname = \"v%d\"\n", i)
	}
	b.WriteString("```\n")
	return []byte(b.String())
}

// benchLab parses and runs a lab the way `sim run` does, and fails on an
// unmet expectation so a broken check cannot look fast.
func benchLab(b *testing.B, src []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		l, err := Parse("bench.md", src)
		if err != nil {
			b.Fatal(err)
		}
		res, err := l.Run(context.Background(), nil, RunOptions{Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if !r.OK() {
				b.Fatalf("block %s: %+v", r.ID, r.Checks)
			}
		}
	}
}

// BenchmarkLabBlocks: the time per block should not grow with the number
// of blocks.
func BenchmarkLabBlocks(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		src := manyBlocks(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchLab(b, src) })
	}
}

// BenchmarkLabVariants: the time per variant should not grow with the
// number of variants.
func BenchmarkLabVariants(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		src := manyVariants(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchLab(b, src) })
	}
}
