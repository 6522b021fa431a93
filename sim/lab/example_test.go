package lab_test

import (
	"context"
	"fmt"

	"github.com/connlab/connlab/sim/lab"
)

// A lab is Markdown whose ```sim blocks hold scenarios: base keys, variants
// shown side by side, and the expectations the page's prose states. Parse
// reads it; Run simulates every block and checks the expectations.
func ExampleParse() {
	src := "+++\ntitle = \"Keep the connection\"\n+++\n\n" +
		"Ten requests, with and without a kept connection:\n\n" +
		"```sim {id=\"reuse\"}\n" +
		"requests = 10\n" +
		"rtt = \"20ms\"\n" +
		"expect = [\"kept.connects == 1\", \"fresh.total_ms.p50 - kept.total_ms.p50 ≈ 50 ±10%\"]\n" +
		"\n[[variant]]\nname = \"fresh\"\nreuse = \"none\"\n" +
		"\n[[variant]]\nname = \"kept\"\nreuse = \"process\"\n" +
		"```\n"
	l, err := lab.Parse("keep.md", []byte(src))
	if err != nil {
		panic(err)
	}
	b := l.Blocks[0]
	fmt.Printf("%s: block %q at line %d, %d variants, %d expectations\n", l.Title, b.ID, b.Line, len(b.Variants), len(b.Expects))
	results, err := l.Run(context.Background(), nil, lab.RunOptions{Seed: 1})
	if err != nil {
		panic(err)
	}
	for _, v := range results[0].Variants {
		fmt.Printf("%-5s connects %2d, total_ms p50 %v\n", v.Name, v.Summary.Connects, v.Summary.Total.P50)
	}
	for _, c := range results[0].Checks {
		fmt.Printf("line %d ok=%v: %s (got %s)\n", c.Line, c.OK, c.Expect, c.Got)
	}

	// A mistake is an error with the file and the line.
	_, err = lab.Parse("typo.md", []byte("```sim {id=\"x\"}\nrequests = 10\nrtt = 20\n```\n"))
	fmt.Println(err)
	// Output:
	// Keep the connection: block "reuse" at line 8, 2 variants, 2 expectations
	// fresh connects 10, total_ms p50 72.85
	// kept  connects  1, total_ms p50 22
	// line 10 ok=true: kept.connects == 1 (got 1)
	// line 10 ok=true: fresh.total_ms.p50 - kept.total_ms.p50 ≈ 50 ±10% (got 50.85)
	// typo.md:3: block "x": rtt: want a duration with its unit, e.g. "20ms", got 20
}
