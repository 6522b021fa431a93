package site

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/evanw/esbuild/pkg/api"
)

// The page's TypeScript helpers answer sim/testdata/helpers.json as their
// Go twins do (sim, sim/lab and sim/cli run the same cases): the
// TypeScript is bundled with esbuild (Hugo's own js.Build) and run in node,
// and its answers are checked here.
func TestHelpersTypeScript(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the TypeScript helpers are not checked")
	}
	casesFile, err := filepath.Abs(filepath.Join("..", "sim", "testdata", "helpers.json"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(casesFile)
	if err != nil {
		t.Fatal(err)
	}
	// The entry computes the TypeScript's answer to every case.
	entry := `
import { readFileSync } from "fs";
import { formatDuration, parseDuration, parseNumber, shellQuote } from "./sim/helpers";
import { blockQuery, parseLinks } from "./sim/link";
const c = JSON.parse(readFileSync(process.argv[2], "utf8"));
const num = (v: number) => (Number.isNaN(v) ? null : v);
const out = {
  parse_duration: c.parse_duration.map((x: any) => num(parseDuration(x.text))),
  format_duration: c.format_duration.map((x: any) => formatDuration(x.ms)),
  parse_number: c.parse_number.map((x: any) => parseNumber(x.input, x.unit)),
  shell_quote: c.shell_quote.map((x: any) => shellQuote(x.in)),
  link_query: c.link_query.map((x: any) => {
    const params: Record<string, string> = {};
    for (const kv of x.set) { const i = kv.indexOf("="); params[kv.slice(0, i)] = kv.slice(i + 1); }
    const q = blockQuery(x.block, params, x.seed);
    const st = parseLinks("?" + x.query).get(x.block);
    return { query: q, set: st ? Object.entries(st.params).map(([k, v]) => k + "=" + v) : null, seed: st ? st.seed : null };
  }),
};
console.log(JSON.stringify(out));
`
	stdout := runTypeScript(t, node, entry, casesFile)
	var got struct {
		ParseDuration  []*float64 `json:"parse_duration"`
		FormatDuration []string   `json:"format_duration"`
		ParseNumber    []*float64 `json:"parse_number"`
		ShellQuote     []string   `json:"shell_quote"`
		LinkQuery      []struct {
			Query string   `json:"query"`
			Set   []string `json:"set"`
			Seed  *uint64  `json:"seed"`
		} `json:"link_query"`
	}
	if err := json.Unmarshal(stdout, &got); err != nil {
		t.Fatalf("node printed %s: %v", stdout, err)
	}
	var want struct {
		ParseDuration []struct {
			Text string   `json:"text"`
			MS   *float64 `json:"ms"`
		} `json:"parse_duration"`
		FormatDuration []struct {
			MS   float64 `json:"ms"`
			Text string  `json:"text"`
		} `json:"format_duration"`
		ParseNumber []struct {
			Input string   `json:"input"`
			Unit  string   `json:"unit"`
			Value *float64 `json:"value"`
		} `json:"parse_number"`
		ShellQuote []struct{ In, Out string } `json:"shell_quote"`
		LinkQuery  []struct {
			Block string   `json:"block"`
			Set   []string `json:"set"`
			Seed  uint64   `json:"seed"`
			Query string   `json:"query"`
		} `json:"link_query"`
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(got.ParseDuration) != len(want.ParseDuration) || len(got.LinkQuery) != len(want.LinkQuery) || len(want.ParseDuration) == 0 {
		t.Fatalf("node answered %d of %d duration cases", len(got.ParseDuration), len(want.ParseDuration))
	}
	same := func(a, b *float64) bool {
		if a == nil || b == nil {
			return a == nil && b == nil
		}
		return *a == *b
	}
	for i, x := range want.ParseDuration {
		if g := got.ParseDuration[i]; !same(g, x.MS) {
			t.Errorf("parseDuration(%q) = %v, want %v", x.Text, show(g), show(x.MS))
		}
	}
	for i, x := range want.FormatDuration {
		if g := got.FormatDuration[i]; g != x.Text {
			t.Errorf("formatDuration(%v) = %q, want %q", x.MS, g, x.Text)
		}
	}
	for i, x := range want.ParseNumber {
		if g := got.ParseNumber[i]; !same(g, x.Value) {
			t.Errorf("parseNumber(%q, %q) = %v, want %v", x.Input, x.Unit, show(g), show(x.Value))
		}
	}
	for i, x := range want.ShellQuote {
		if g := got.ShellQuote[i]; g != x.Out {
			t.Errorf("shellQuote(%q) = %s, want %s", x.In, g, x.Out)
		}
	}
	for i, x := range want.LinkQuery {
		g := got.LinkQuery[i]
		if g.Query != x.Query {
			t.Errorf("blockQuery(%s, %q, %d) = %s, want %s", x.Block, x.Set, x.Seed, g.Query, x.Query)
		}
		if g.Seed == nil || *g.Seed != x.Seed || !slices.Equal(g.Set, x.Set) && len(g.Set)+len(x.Set) > 0 {
			t.Errorf("parseLinks(?%s) = %q seed %v, want %q seed %d", x.Query, g.Set, g.Seed, x.Set, x.Seed)
		}
	}
}

func show(f *float64) any {
	if f == nil {
		return "an error"
	}
	return *f
}

// runTypeScript bundles entry, TypeScript that imports the widgets' modules
// (assets/ts), with esbuild (Hugo's own js.Build), runs it in node with
// args and returns what it printed.
func runTypeScript(t *testing.T, node, entry string, args ...string) []byte {
	t.Helper()
	res := api.Build(api.BuildOptions{
		Stdin:    &api.StdinOptions{Contents: entry, ResolveDir: filepath.Join("assets", "ts"), Loader: api.LoaderTS, Sourcefile: "entry.ts"},
		Bundle:   true,
		Platform: api.PlatformNode,
		Format:   api.FormatCommonJS,
		Write:    false,
	})
	if len(res.Errors) > 0 {
		t.Fatalf("esbuild: %v", res.Errors)
	}
	bundle := filepath.Join(t.TempDir(), "entry.js")
	if err := os.WriteFile(bundle, res.OutputFiles[0].Contents, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, err := exec.Command(node, append([]string{bundle}, args...)...).Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	return stdout
}
