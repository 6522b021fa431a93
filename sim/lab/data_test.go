package lab

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/connlab/connlab/sim/internal/jsonlite"
)

// fromJSON is what the page's model does with `sim lab --json`: the data
// through JSON, then FromData.
func fromJSON(t *testing.T, d *Data) *Lab {
	t.Helper()
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var back Data
	if err := jsonlite.Unmarshal(raw, &back, jsonlite.Options{DisallowUnknown: true}); err != nil {
		t.Fatal(err)
	}
	l, err := FromData(&back)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// runJSON runs every block of l with seed 1 and returns the results as
// JSON, and how many blocks ran: a lab from its data must run to the same
// bytes as the lab read from its source.
func runJSON(t *testing.T, l *Lab) ([]byte, int) {
	t.Helper()
	res, err := l.Run(context.Background(), nil, RunOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return b, len(res)
}

// A lab made from its data runs every block and every exercise instance to
// the same bytes as the lab read from its source, and gives the same data.
func TestFromDataRunsAsRead(t *testing.T) {
	files, _ := filepath.Glob("../../labs/*.md")
	more, _ := filepath.Glob("../../content/*.md")
	blocks, exercises := 0, 0
	for _, f := range append(files, more...) {
		read, err := ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d, err := read.Data()
		if err != nil {
			t.Fatal(err)
		}
		l := fromJSON(t, d)
		d2, err := l.Data()
		if err != nil {
			t.Fatal(err)
		}
		a, _ := json.Marshal(d)
		b, _ := json.Marshal(d2)
		if string(a) != string(b) {
			t.Errorf("%s: data of the lab from its data differs:\n%s\n%s", f, b, a)
		}
		if strings.HasSuffix(f, ".ko.md") {
			continue // the same blocks as the English file (site tests)
		}
		if len(read.Blocks) > 0 {
			w, _ := runJSON(t, read)
			g, n := runJSON(t, l)
			if string(w) != string(g) {
				t.Errorf("%s: runs differ:\n%s\n%s", f, g, w)
			}
			blocks += n
		}
		xs, _ := read.Exercises()
		ys, _ := l.Exercises()
		if len(xs) != len(ys) {
			t.Fatalf("%s: %d exercises from data, %d read", f, len(ys), len(xs))
		}
		for i := range xs {
			for _, seed := range []uint64{0, 7} {
				w, err := xs[i].Instance(context.Background(), seed)
				if err != nil {
					t.Fatal(err)
				}
				g, err := ys[i].Instance(context.Background(), seed)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(g, w) {
					t.Errorf("%s %s seed %d: instance from data\n%+v\nread\n%+v", f, xs[i].ID, seed, g, w)
				}
			}
			exercises++
		}
	}
	if blocks < 10 || exercises < 5 {
		t.Errorf("only %d blocks and %d exercises compared", blocks, exercises)
	}
}

// A block's controls are its own keys in `sim params` order, without the
// keys a variant sets; sets and fixed keys are shown as they are.
func TestBlockControls(t *testing.T) {
	l, err := Parse("x.md", []byte("```sim {id=\"b\"}\nsetup = \"http\"\nrtt = \"5ms\"\nrequests = 3\nreuse = \"none\"\nshare_sets = [[\"dns\"]]\n[[variant]]\nname = \"a\"\nreuse = \"process\"\n```\n"))
	if err != nil {
		t.Fatal(err)
	}
	d := l.Blocks[0].Data()
	var keys []string
	for _, c := range d.Controls {
		keys = append(keys, c.Key)
	}
	var fixed []string
	for _, s := range d.Fixed {
		fixed = append(fixed, s.Key)
	}
	if strings.Join(keys, " ") != "requests rtt" || strings.Join(fixed, " ") != "share_sets setup" {
		t.Errorf("controls %v, fixed %v; want [requests rtt] and [share_sets setup]", keys, fixed)
	}
	if d.Controls[1].Value != "5ms" || d.Controls[1].Unit == "" && d.Controls[1].Kind != "duration" {
		t.Errorf("rtt control %+v", d.Controls[1])
	}
	if d.PortCount != 60999-32768+1 {
		t.Errorf("port count %d, want the default range's", d.PortCount)
	}
}

// Bad data is an error naming the file, line and what is wrong.
func TestFromDataRefuses(t *testing.T) {
	good := func() *Data {
		return &Data{File: "x.md", Blocks: []BlockData{{ID: "b", Line: 2, Variants: []VariantData{{Name: "base", Line: 2}}}}}
	}
	for _, c := range []struct {
		name string
		edit func(d *Data)
		want string
	}{
		{"unknown key", func(d *Data) { d.Blocks[0].Base = []Setting{{Key: "rtx", Value: "1ms", Line: 3}} }, "x.md:3"},
		{"bad value", func(d *Data) { d.Blocks[0].Variants[0].Settings = []Setting{{Key: "rtt", Value: "fast", Line: 4}} }, "rtt"},
		{"no variants", func(d *Data) { d.Blocks[0].Variants = nil }, "no variants"},
		{"twice", func(d *Data) { d.Blocks = append(d.Blocks, d.Blocks[0]) }, "used twice"},
		{"expect", func(d *Data) { d.Blocks[0].Expect = []ExpectData{{Text: "base.nope > 1", Line: 5}} }, "x.md:5"},
		{"exercise block", func(d *Data) {
			d.Exercises = []ExerciseData{{ID: "e", Kind: "number", FenceLine: 9, Block: "zz", Metric: "total_ms.p50"}}
		}, "zz"},
		{"exercise kind", func(d *Data) { d.Exercises = []ExerciseData{{ID: "e", Kind: "essay", FenceLine: 9}} }, "x.md:9"},
	} {
		d := good()
		c.edit(d)
		if _, err := FromData(d); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	if _, err := FromData(good()); err != nil {
		t.Fatal(err)
	}
}

// A chain's tiers travel in the data: the lab from its data runs the same,
// and a page shows the tiers' own keys as controls.
func TestFromDataChain(t *testing.T) {
	read, err := Parse("chain.md", []byte(chainLab))
	if err != nil {
		t.Fatal(err)
	}
	d, err := read.Data()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(d.Blocks[0].Tiers, " "); got != "nginx app redis" {
		t.Fatalf("tiers %q", got)
	}
	w, _ := runJSON(t, read)
	g, _ := runJSON(t, fromJSON(t, d))
	if string(w) != string(g) {
		t.Errorf("the chain from its data runs differently:\n%s\n%s", g, w)
	}
	var keys []string
	for _, c := range d.Blocks[0].Controls {
		keys = append(keys, c.Key)
	}
	if !slices.Contains(keys, "tier.app.threads") || slices.Contains(keys, "tier.nginx.reuse") {
		t.Errorf("controls %v: want the tiers' keys but those a variant sets", keys)
	}
}
