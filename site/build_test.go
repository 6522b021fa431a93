package site

// Build checks: the site is built once (as `make data site` does, into a
// temporary directory) and its output is held to the contracts the widget
// and the pages rely on: every block becomes a widget with the right data
// and a no-JavaScript fallback, the widget bundle loads only where a widget
// is and stays under 60 KB gzipped, the {{< sim >}} numbers are the model's
// values formatted per language, and a wrong reference fails the build with
// the file and line.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/connlab/connlab/internal/testutil"
	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/cli"
	"github.com/connlab/connlab/sim/harness"
	"github.com/connlab/connlab/sim/i18n"
	"github.com/connlab/connlab/sim/lab"
	"github.com/pelletier/go-toml/v2"
	"golang.org/x/net/html"
)

// maxBundleGzip is the widget bundle's budget.
const maxBundleGzip = 60 << 10

// builtSite is the site built once for this package's tests.
type builtSite struct {
	root    string // the repository
	dir     string // temporary: data/, public/, resources/
	public  string
	data    string
	pages   []sitePage                // pages with ```sim blocks, both languages
	outputs map[string]*siteLabOutput // page name → `sim run --json --series`
	raw     map[string]map[string]any // the same, undecoded
}

// sitePage is one page with ```sim blocks in one language.
type sitePage struct {
	name string // file name without .md / .ko.md
	lang string
	file string // path from the repository root
	url  string // path of its index.html under public/
	lab  *lab.Lab
}

// page is the built page of that name in lang; the test stops without it.
func (s *builtSite) page(t testing.TB, name, lang string) *sitePage {
	t.Helper()
	for i := range s.pages {
		if s.pages[i].name == name && s.pages[i].lang == lang {
			return &s.pages[i]
		}
	}
	t.Fatalf("no %s page %s among the built pages", lang, name)
	return nil
}

type siteLabOutput struct {
	Blocks []struct {
		ID       string `json:"id"`
		Variants []struct {
			Name    string         `json:"name"`
			Label   string         `json:"label"`
			Error   string         `json:"error"`
			Summary map[string]any `json:"summary"`
		} `json:"variants"`
		Checks []lab.Check `json:"checks"`
	} `json:"blocks"`
}

var (
	siteOnce  sync.Once
	siteState *builtSite
	siteErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if siteState != nil {
		os.RemoveAll(siteState.dir)
	}
	testutil.RemoveSimBinary()
	os.Exit(code)
}

// site builds the site once; every test that reads the output calls it.
func site(t testing.TB) *builtSite {
	t.Helper()
	siteOnce.Do(func() { siteState, siteErr = buildSite() })
	if siteErr != nil {
		t.Fatal(siteErr)
	}
	return siteState
}

func buildSite() (*builtSite, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "connlab-site-")
	if err != nil {
		return nil, err
	}
	s := &builtSite{root: root, dir: dir, public: filepath.Join(dir, "public"), data: filepath.Join(dir, "data"),
		outputs: map[string]*siteLabOutput{}, raw: map[string]map[string]any{}}
	if err := s.writeData(); err != nil {
		return s, err
	}
	if err := s.buildWasm(); err != nil {
		return s, err
	}
	if out, err := hugo(root, s.config(nil), "-d", s.public, "--gc", "--minify"); err != nil {
		return s, fmt.Errorf("hugo: %v\n%s", err, out)
	}
	return s, nil
}

// writeData runs `make data` into s.data (with its own sim binary), then
// reads every page's results.
func (s *builtSite) writeData() error {
	cmd := exec.Command("make", "-s", "data", "DATADIR="+s.data, "BIN="+filepath.Join(s.dir, "sim"), "GO="+goCommand())
	cmd.Dir = s.root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("make data: %v\n%s", err, out)
	}
	for _, dir := range []string{"labs", "content"} {
		files, _ := filepath.Glob(filepath.Join(s.root, dir, "*.md"))
		slices.Sort(files)
		for _, f := range files {
			if strings.HasSuffix(f, ".ko.md") {
				continue
			}
			l, err := lab.ReadFile(f)
			if err != nil {
				return err
			}
			if len(l.Blocks) == 0 {
				continue
			}
			name := strings.TrimSuffix(filepath.Base(f), ".md")
			out, err := os.ReadFile(filepath.Join(s.data, "results", name+".json"))
			if err != nil {
				return err
			}
			var lo siteLabOutput
			var raw map[string]any
			if err := json.Unmarshal(out, &lo); err != nil {
				return err
			}
			if err := json.Unmarshal(out, &raw); err != nil {
				return err
			}
			s.outputs[name], s.raw[name] = &lo, raw
			for _, lang := range []string{"en", "ko"} {
				file := filepath.Join(dir, name+".md")
				if lang == "ko" {
					file = filepath.Join(dir, name+".ko.md")
				}
				pl, err := lab.ReadFile(filepath.Join(s.root, file))
				if os.IsNotExist(err) {
					continue
				}
				if err != nil {
					return err
				}
				s.pages = append(s.pages, sitePage{name: name, lang: lang, file: file, url: pageURL(dir, name, lang), lab: pl})
			}
		}
	}
	return nil
}

// buildWasm does what `make wasm` does, into s.dir/wasm, with make itself,
// so the build's flags are written once (the Makefile).
func (s *builtSite) buildWasm() error {
	cmd := exec.Command("make", "-s", "wasm", "WASMDIR="+filepath.Join(s.dir, "wasm"), "GO="+goCommand())
	cmd.Dir = s.root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("make wasm: %v\n%s", err, out)
	}
	return nil
}

func goCommand() string {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		return "go"
	}
	return goBin
}

// pageURL is where Hugo writes a page: labs under /labs/, Korean under /ko/.
func pageURL(dir, name, lang string) string {
	u := "/"
	if lang != "en" {
		u += lang + "/"
	}
	if dir == "labs" {
		u += "labs/"
	}
	if name != "_index" {
		u += name + "/"
	}
	return u
}

// config writes a copy of site/hugo.toml that reads data from s.data and
// keeps Hugo's generated resources in s.dir; mounts (target → source)
// replace others, e.g. to build the site over test content.
func (s *builtSite) config(mounts map[string]string) string {
	src, err := os.ReadFile(filepath.Join(s.root, "site", "hugo.toml"))
	if err != nil {
		panic(err)
	}
	var cfg map[string]any
	if err := toml.Unmarshal(src, &cfg); err != nil {
		panic(fmt.Sprintf("site/hugo.toml: %v", err))
	}
	all := map[string]string{"data": s.data, "assets/wasm": filepath.Join(s.dir, "wasm")}
	for k, v := range mounts {
		all[k] = v
	}
	module := cfg["module"].(map[string]any)
	var list []any
	// Mounts of targets the file lacks go first: they win over the
	// directories mounted above them (site/assets/wasm of a make wasm).
	have := map[string]bool{}
	for _, m := range module["mounts"].([]any) {
		have[m.(map[string]any)["target"].(string)] = true
	}
	targets := make([]string, 0, len(all))
	for target := range all {
		targets = append(targets, target)
	}
	slices.Sort(targets)
	for _, target := range targets {
		if !have[target] && all[target] != "" {
			list = append(list, map[string]any{"source": all[target], "target": target})
		}
	}
	for _, m := range module["mounts"].([]any) {
		mm := m.(map[string]any)
		target := mm["target"].(string)
		if src, ok := all[target]; ok {
			if src == "" {
				continue // dropped
			}
			mm["source"] = src
		} else if source := mm["source"].(string); !filepath.IsAbs(source) {
			mm["source"] = filepath.Join(s.root, "site", source)
		}
		// A directory mounted here replaces the same files of a wider
		// mount: the .wasm of a developer's `make wasm` in site/assets/wasm
		// must not stand in for the one this build made (it did: the
		// mount listed first did not win).
		var exclude []any
		for sub, src := range all {
			if rest, ok := strings.CutPrefix(sub, target+"/"); ok && src != "" && !have[sub] {
				exclude = append(exclude, rest+"/**")
			}
		}
		if len(exclude) > 0 {
			slices.SortFunc(exclude, func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
			mm["excludeFiles"] = exclude
		}
		list = append(list, mm)
	}
	module["mounts"] = list
	cfg["resourceDir"] = filepath.Join(s.dir, "resources")
	out, err := toml.Marshal(cfg)
	if err != nil {
		panic(err)
	}
	f, err := os.CreateTemp(s.dir, "hugo-*.toml")
	if err != nil {
		panic(err)
	}
	f.Write(out)
	f.Close()
	return f.Name()
}

// hugo runs the pinned Hugo (go tool hugo) on site/ with a config file.
func hugo(root, config string, args ...string) ([]byte, error) {
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goBin); err != nil {
		goBin = "go"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, append([]string{"tool", "hugo", "--config", config, "-s", filepath.Join(root, "site")}, args...)...)
	cmd.Dir = root
	cmd.Env = os.Environ()
	return cmd.CombinedOutput()
}

// simCLI runs the sim command in process and returns its standard output.
func simCLI(args ...string) ([]byte, error) {
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), &cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb}, args)
	if code != 0 {
		return nil, fmt.Errorf("sim %s: exit %d: %s", strings.Join(args, " "), code, errb.String())
	}
	return out.Bytes(), nil
}

// ---------------------------------------------------------------------------
// HTML helpers.

func parseHTML(t *testing.T, path string) *html.Node {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := html.Parse(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return doc
}

func (s *builtSite) html(t *testing.T, url string) *html.Node {
	t.Helper()
	return parseHTML(t, filepath.Join(s.public, filepath.FromSlash(url), "index.html"))
}

func hAttr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hHasClass(n *html.Node, class string) bool {
	return n.Type == html.ElementNode && slices.Contains(strings.Fields(hAttr(n, "class")), class)
}

// hFind lists the elements under n with the tag (any if "") and class (any if "").
func hFind(n *html.Node, tag, class string) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && (tag == "" || n.Data == tag) && (class == "" || hHasClass(n, class)) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func hText(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// scriptSrcs lists a page's script URLs.
func scriptSrcs(doc *html.Node) []string {
	var out []string
	for _, n := range hFind(doc, "script", "") {
		if src := hAttr(n, "src"); src != "" {
			out = append(out, src)
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// Tests.

// Every page with ```sim blocks is built in each of its languages, with one
// widget per block, carrying the block's TOML as it is (the fallback), the
// data the widget builds from, and the build-time results.
func TestWidgetsMatchBlocks(t *testing.T) {
	s := site(t)
	if len(s.pages) < 10 {
		t.Fatalf("only %d pages with blocks found; want the five labs in two languages at least", len(s.pages))
	}
	for _, p := range s.pages {
		t.Run(p.lang+"/"+p.name, func(t *testing.T) {
			doc := s.html(t, p.url)
			figs := hFind(doc, "figure", "sim")
			if len(figs) != len(p.lab.Blocks) {
				t.Fatalf("%s: %d widgets, want one per block (%d)", p.url, len(figs), len(p.lab.Blocks))
			}
			out := s.outputs[p.name]
			for i, b := range p.lab.Blocks {
				fig := figs[i]
				if got := hAttr(fig, "data-sim-block"); got != b.ID {
					t.Errorf("widget %d is block %q, want %q (blocks in order)", i, got, b.ID)
					continue
				}
				pre := hFind(fig, "pre", "sim-toml")
				if len(pre) != 1 || strings.TrimSpace(hText(pre[0])) != strings.TrimSpace(b.Source) {
					t.Errorf("block %s: the widget's TOML fallback differs from the block's source", b.ID)
				}
				if d := hFind(fig, "details", "sim-source"); len(d) != 1 || hAttr(d[0], "open") == "" && !hasAttr(d[0], "open") {
					t.Errorf("block %s: the TOML must be visible without JavaScript (details open)", b.ID)
				}
				scripts := hFind(fig, "script", "sim-data")
				if len(scripts) != 1 {
					t.Fatalf("block %s: no sim-data", b.ID)
				}
				var data struct {
					Lab, Block, File string
					Controls         []struct {
						Key   string
						Kind  string
						Value any
					}
					Fixed    map[string]any
					Variants []struct{ Name, Label string }
					Results  struct {
						Variants []struct {
							Name    string
							Summary map[string]any
							Series  []map[string]any
						}
						Checks []lab.Check
					}
				}
				if err := json.Unmarshal([]byte(hText(scripts[0])), &data); err != nil {
					t.Fatalf("block %s: sim-data: %v", b.ID, err)
				}
				wantFile := filepath.ToSlash(strings.Replace(p.file, ".ko.md", ".md", 1))
				if data.Lab != p.name || data.Block != b.ID || data.File != wantFile {
					t.Errorf("block %s: lab %q block %q file %q, want %q %q %q", b.ID, data.Lab, data.Block, data.File, p.name, b.ID, wantFile)
				}
				// Controls: the block's own keys that no variant sets, but
				// for those shown as fixed text (share sets, setup).
				varKeys := map[string]bool{}
				for _, v := range b.Variants {
					for _, st := range v.Settings {
						varKeys[st.Key] = true
					}
				}
				var want []string
				for _, st := range b.Base {
					param, _ := sim.LookupParam(st.Key)
					switch {
					case varKeys[st.Key]:
					case st.Key == "share_sets":
					case strings.HasPrefix(st.Key, "tier."):
						// A chain's tiers are named as fixed text; a tier's
						// own keys (tier.NAME.KEY) are controls like the
						// block's, but for those of a fixed kind.
						if _, ok := data.Fixed["tier"]; !ok {
							t.Errorf("block %s: its tiers are not shown (fixed text \"tier\")", b.ID)
						}
						key := st.Key[strings.LastIndexByte(st.Key, '.')+1:]
						tp, isParam := sim.LookupParam(key)
						switch {
						case isParam && !tp.Fixed && tp.Kind != "sets" && tp.Kind != "shares":
							want = append(want, st.Key)
						case data.Fixed[st.Key] == nil:
							t.Errorf("block %s: %s is neither a control nor fixed text", b.ID, st.Key)
						}
					case param.Fixed:
						if _, ok := data.Fixed[st.Key]; !ok {
							t.Errorf("block %s: %s is neither a control nor fixed text", b.ID, st.Key)
						}
					default:
						want = append(want, st.Key)
					}
				}
				var got []string
				for _, c := range data.Controls {
					got = append(got, c.Key)
				}
				slices.Sort(want)
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Errorf("block %s: controls %v, want the block's keys that variants leave alone %v", b.ID, got, want)
				}
				if len(data.Variants) != len(b.Variants) {
					t.Fatalf("block %s: %d variants, want %d", b.ID, len(data.Variants), len(b.Variants))
				}
				for k, v := range b.Variants {
					if data.Variants[k].Name != v.Name {
						t.Errorf("block %s: variant %d is %q, want %q", b.ID, k, data.Variants[k].Name, v.Name)
					}
				}
				// Build-time results: the CLI's, summary for summary.
				var cliBlock = -1
				for k, cb := range out.Blocks {
					if cb.ID == b.ID {
						cliBlock = k
					}
				}
				if cliBlock < 0 {
					t.Fatalf("block %s: not in sim run's output", b.ID)
				}
				cb := out.Blocks[cliBlock]
				if len(data.Results.Variants) != len(cb.Variants) {
					t.Fatalf("block %s: %d build-time variants, sim run has %d", b.ID, len(data.Results.Variants), len(cb.Variants))
				}
				for k, v := range cb.Variants {
					bv := data.Results.Variants[k]
					for _, key := range []string{"calls", "connects", "errors", "port_errors", "time_wait_peak"} {
						if fmt.Sprint(bv.Summary[key]) != fmt.Sprint(v.Summary[key]) {
							t.Errorf("block %s variant %s: %s = %v in the page, %v from sim run", b.ID, v.Name, key, bv.Summary[key], v.Summary[key])
						}
					}
					if len(bv.Series) > 310 {
						t.Errorf("block %s variant %s: %d series points embedded, want at most about 300", b.ID, v.Name, len(bv.Series))
					}
				}
				if len(data.Results.Checks) != len(cb.Checks) {
					t.Errorf("block %s: %d checks in the page, sim run has %d", b.ID, len(data.Results.Checks), len(cb.Checks))
				}
				// The static results table, one column per variant.
				if tables := hFind(fig, "table", "sim-table"); len(tables) != 1 || len(hFind(tables[0], "th", "")) < len(b.Variants) {
					t.Errorf("block %s: the build-time results table is missing", b.ID)
				}
			}
		})
	}
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

// The widget bundle is loaded only by pages with a widget, and is small.
func TestBundle(t *testing.T) {
	s := site(t)
	withWidget := map[string]bool{}
	for _, p := range s.pages {
		withWidget[p.url] = true
	}
	bundles := map[string]bool{}
	n := 0
	err := filepath.WalkDir(s.public, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".html") {
			return err
		}
		rel, _ := filepath.Rel(s.public, path)
		url := "/" + filepath.ToSlash(strings.TrimSuffix(rel, "index.html"))
		doc := parseHTML(t, path)
		var sim []string
		for _, src := range scriptSrcs(doc) {
			if strings.Contains(src, "/js/sim.") {
				sim = append(sim, src)
			}
		}
		want := withWidget[url]
		if want && len(sim) != 1 {
			t.Errorf("%s has widgets but loads the sim bundle %d times", url, len(sim))
		}
		if !want && len(sim) > 0 {
			t.Errorf("%s has no widget but loads %v", url, sim)
		}
		for _, b := range sim {
			bundles[b] = true
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 15 {
		t.Fatalf("only %d HTML files built", n)
	}
	if len(bundles) != 1 {
		t.Fatalf("pages load %d different sim bundles, want one shared: %v", len(bundles), bundles)
	}
	for b := range bundles {
		js, err := os.ReadFile(filepath.Join(s.public, filepath.FromSlash(b)))
		if err != nil {
			t.Fatal(err)
		}
		var z bytes.Buffer
		w, _ := gzip.NewWriterLevel(&z, gzip.BestCompression)
		w.Write(js)
		w.Close()
		t.Logf("%s: %d bytes, %d gzipped (budget %d)", b, len(js), z.Len(), maxBundleGzip)
		if z.Len() > maxBundleGzip {
			t.Errorf("the sim bundle is %d bytes gzipped, over the %d budget", z.Len(), maxBundleGzip)
		}
		if bytes.Contains(js, []byte("sourceMappingURL")) || bytes.Count(js, []byte("\n")) > 50 {
			t.Errorf("the sim bundle is not minified")
		}
	}
}

// Every {{< sim >}} value on every page is the model's value, formatted as
// the page's language writes it.
func TestShortcodeValues(t *testing.T) {
	s := site(t)
	seen := 0
	err := filepath.WalkDir(s.public, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".html") {
			return err
		}
		rel, _ := filepath.Rel(s.public, path)
		lang := "en"
		if strings.HasPrefix(filepath.ToSlash(rel), "ko/") {
			lang = "ko"
		}
		for _, span := range hFind(parseHTML(t, path), "span", "sim-value") {
			seen++
			page, block, variant, metric := hAttr(span, "data-page"), hAttr(span, "data-block"), hAttr(span, "data-variant"), hAttr(span, "data-metric")
			v, ok := resultValue(s.raw[page], block, variant, metric)
			if !ok {
				t.Errorf("%s: %s/%s/%s/%s: no such value in the results", rel, page, block, variant, metric)
				continue
			}
			want := formatMetric(lang, metric, v)
			if got := hText(span); got != want {
				t.Errorf("%s: {{< sim %q %q %q >}} = %q, want %q (value %v)", rel, block, variant, metric, got, want, v)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Fatal("no {{< sim >}} value on any page")
	}
}

func resultValue(raw map[string]any, block, variant, metric string) (any, bool) {
	blocks, _ := raw["blocks"].([]any)
	for _, b := range blocks {
		bm := b.(map[string]any)
		if bm["id"] != block {
			continue
		}
		for _, v := range bm["variants"].([]any) {
			vm := v.(map[string]any)
			if vm["name"] != variant {
				continue
			}
			if metric == "error" {
				e, ok := vm["error"].(string)
				return e, ok && e != ""
			}
			var cur any = vm["summary"]
			for _, k := range strings.Split(metric, ".") {
				m, ok := cur.(map[string]any)
				if !ok {
					return nil, false
				}
				if cur, ok = m[k]; !ok {
					return nil, false
				}
			}
			return cur, cur != nil
		}
	}
	return nil, false
}

// formatNumber is partials/fmt-number.html in Go: no decimals from 10 up,
// one below 10, two below 1, trailing zeros dropped, digits grouped by 3.
func formatNumber(v float64) string {
	a := math.Abs(v)
	p := 0
	switch {
	case a < 1:
		p = 2
	case a < 10:
		p = 1
	}
	s := strconv.FormatFloat(v, 'f', p, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	out := b.String()
	if frac != "" {
		out += "." + frac
	}
	if neg && out != "0" {
		out = "-" + out
	}
	return out
}

func formatMetric(lang, metric string, v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = formatNumber(e.(float64))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	n := formatNumber(v.(float64))
	base, _, _ := strings.Cut(metric, ".")
	nb := "\u00a0"
	switch {
	case strings.HasSuffix(base, "_ms"):
		return n + nb + "ms"
	case strings.HasSuffix(base, "_rps"):
		if lang == "ko" {
			return "초당 " + n + "건"
		}
		return n + nb + "req/s"
	case strings.HasSuffix(base, "_s"):
		if lang == "ko" {
			return n + "초"
		}
		return n + nb + "s"
	}
	return n
}

func TestFormatNumber(t *testing.T) {
	for v, want := range map[float64]string{92.85: "93", 14: "14", 4.2: "4.2", 4.04: "4", 0.25: "0.25", 0.5: "0.5",
		0.004: "0", 28232: "28,232", 1234567.8: "1,234,568", 47.05: "47", 9.96: "10", -3.5: "-3.5"} {
		if got := formatNumber(v); got != want {
			t.Errorf("formatNumber(%v) = %q, want %q", v, got, want)
		}
	}
}

// A reference to a block, variant, metric or page that does not exist, or
// a ```sim block without an id, fails the build and names the file and line.
func TestBuildErrors(t *testing.T) {
	s := site(t)
	content := t.TempDir()
	page := `+++
title = "Bad references"
+++

Fine: {{< sim "across-requests" "share" "total_ms.p50" "php-persistent-share" >}}.
Block: {{< sim "no-such-block" "share" "total_ms.p50" "php-persistent-share" >}}.
Variant: {{< sim "across-requests" "no-such-variant" "total_ms.p50" "php-persistent-share" >}}.
Metric: {{< sim "across-requests" "share" "no_such_ms" "php-persistent-share" >}}.
Page: {{< sim "across-requests" "share" "total_ms.p50" "no-such-page" >}}.

` + "```sim\nrequests = 1\n```\n"
	if err := os.WriteFile(filepath.Join(content, "bad.md"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := s.config(map[string]string{"content": content, "content/labs": ""})
	out, err := hugo(s.root, cfg, "-d", filepath.Join(t.TempDir(), "public"))
	if err == nil {
		t.Fatalf("the build succeeded over bad references:\n%s", out)
	}
	for _, want := range [][2]string{
		{"bad.md:6:", `sim shortcode: page "php-persistent-share" has no block "no-such-block"`},
		{"bad.md:7:", `sim shortcode: block "across-requests" of page "php-persistent-share" has no variant "no-such-variant" (variants: share, persistent)`},
		{"bad.md:8:", `sim shortcode: variant "share" of block "across-requests" (page "php-persistent-share") has no metric "no_such_ms"`},
		{"bad.md:9:", `sim shortcode: no results for page "no-such-page"`},
		{"bad.md:11:", "a ```sim block needs an id"},
	} {
		found := false
		for _, line := range strings.Split(string(out), "\n") {
			if strings.Contains(line, want[0]) && strings.Contains(line, want[1]) {
				found = true
			}
		}
		if !found {
			t.Errorf("no build error at %s saying\n\t%s\ngot:\n%s", want[0], want[1], out)
		}
	}
}

var (
	tsKeyRE     = regexp.MustCompile(`\bt\("([a-z0-9_]+)"`)
	layoutKeyRE = regexp.MustCompile(`\bT "([a-z0-9_]+)"`)
	listKeyRE   = regexp.MustCompile(`"([a-z0-9_]+)"`)
)

// The UI strings (sim/i18n, which checks that both languages have the same
// keys): every key the templates and the widget use exists, and the
// widget's keys reach the page.
func TestUIStrings(t *testing.T) {
	en := map[string]bool{}
	for _, k := range i18n.Keys("en") {
		en[k] = true
	}
	// The real-run caption states the cap on the harness overhead that
	// the tolerance allows: the harness's, in both languages.
	cap := strconv.FormatFloat(float64(harness.MaxTare)/1e6, 'f', -1, 64) + " ms"
	for _, lang := range i18n.Langs {
		if s, _ := i18n.Lookup(lang, "w_overhead"); !strings.Contains(s, cap) {
			t.Errorf("sim/i18n/%s.toml w_overhead %q does not say %s (harness.MaxTare)", lang, s, cap)
		}
	}
	list, err := os.ReadFile(filepath.Join("layouts", "_partials", "widget-strings.html"))
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(list), "$keys := slice")
	listed := map[string]bool{}
	for _, p := range sim.Phases() {
		listed[p.Label] = true // the template appends every phase's label
	}
	for _, m := range listKeyRE.FindAllStringSubmatch(body, -1) {
		listed[m[1]] = true
		if !en[m[1]] {
			t.Errorf("widget-strings.html lists %q, which sim/i18n/en.toml lacks", m[1])
		}
	}
	// The exercise widget's words: exercise-strings.html lists the keys it
	// reads as ex_KEY and passes as KEY, which the exercises' t(…) read
	// (exercises.ts and exercise/).
	exList, err := os.ReadFile(filepath.Join("layouts", "_partials", "exercise-strings.html"))
	if err != nil {
		t.Fatal(err)
	}
	_, exBody, _ := strings.Cut(string(exList), "$keys := slice")
	exBody, _, _ = strings.Cut(exBody, "-}}")
	exKeys := map[string]bool{}
	for _, m := range listKeyRE.FindAllStringSubmatch(exBody, -1) {
		exKeys[m[1]] = true
		if !en["ex_"+m[1]] {
			t.Errorf("exercise-strings.html lists %q, which sim/i18n/en.toml lacks as ex_%s", m[1], m[1])
		}
	}
	exercise := func(path string) bool {
		return strings.HasSuffix(path, "exercises.ts") || strings.HasPrefix(filepath.ToSlash(path), "assets/ts/exercise/")
	}
	used, exUsed := 0, 0
	filepath.WalkDir(filepath.Join("assets", "ts"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".ts") {
			return err
		}
		src, _ := os.ReadFile(path)
		for _, m := range tsKeyRE.FindAllStringSubmatch(string(src), -1) {
			if exercise(path) {
				exUsed++
				if !exKeys[m[1]] {
					t.Errorf("%s uses t(%q), which layouts/_partials/exercise-strings.html does not pass to the page", path, m[1])
				}
				continue
			}
			used++
			if !listed[m[1]] {
				t.Errorf("%s uses t(%q), which layouts/_partials/widget-strings.html does not pass to the page", path, m[1])
			}
		}
		return nil
	})
	if used < 50 {
		t.Errorf("found only %d t(…) calls in assets/ts; the pattern is stale", used)
	}
	if len(exKeys) < 50 || exUsed < 20 {
		t.Errorf("exercise-strings.html lists %d keys, the exercises use %d: the patterns are stale", len(exKeys), exUsed)
	}
	filepath.WalkDir("layouts", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		src, _ := os.ReadFile(path)
		for _, m := range layoutKeyRE.FindAllStringSubmatch(string(src), -1) {
			if !en[m[1]] {
				t.Errorf("%s uses T %q, which sim/i18n/en.toml lacks", path, m[1])
			}
		}
		return nil
	})
}

// The home page tells how to run the labs locally, in both languages, and
// every page has the language switch and the navigation.
func TestChrome(t *testing.T) {
	s := site(t)
	for _, url := range []string{"/", "/ko/"} {
		doc := s.html(t, url)
		box := hFind(doc, "aside", "run-locally")
		if len(box) != 1 || !strings.Contains(hText(box[0]), "make serve") {
			t.Errorf("%s: no \"run locally: make serve\" note", url)
		}
	}
	for _, p := range s.pages {
		doc := s.html(t, p.url)
		sw := hFind(doc, "nav", "lang-switch")
		if len(sw) != 1 || len(hFind(sw[0], "a", "")) == 0 {
			t.Errorf("%s: no language switch", p.url)
		}
		if len(hFind(doc, "header", "site-header")) != 1 || len(hFind(doc, "footer", "site-footer")) != 1 {
			t.Errorf("%s: header or footer missing", p.url)
		}
		if html := hFind(doc, "html", ""); len(html) != 1 || hAttr(html[0], "lang") != p.lang {
			t.Errorf("%s: <html lang> is not %q", p.url, p.lang)
		}
		if !slices.ContainsFunc(hFind(doc, "link", ""), func(n *html.Node) bool { return hAttr(n, "media") == "print" }) {
			t.Errorf("%s: no print stylesheet", p.url)
		}
		if strings.HasPrefix(p.file, "labs") && len(hFind(doc, "nav", "pager")) != 1 {
			t.Errorf("%s: no previous/next lab navigation", p.url)
		}
	}
}
