package site

// Benchmarks of the model in the page (make bench): the .wasm's size,
// compressed as a host sends it; the time from navigation to the first
// model result on the PHP lab in headless Chromium, with an empty cache
// and with the .wasm cached (coming from another site, or from another
// page of this one), and, for reference, the lab's model alone on an
// empty page; and the time of a re-run after a slider move on each lab's
// largest block of at most 10,000 requests. Targets: 1 MB gzipped; 1.5 s,
// 300 ms cached; 100 ms. CONNLAB_JS_FLAGS passes V8 flags to Chromium
// (browser_test.go): with --wasm-caching-timeout-ms=0 it writes the .wasm's
// code cache as soon as it has optimized code, rather than after 2 s with
// no new optimized code.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
	"github.com/connlab/connlab/internal/testutil"
)

func BenchmarkModelWasmSize(b *testing.B) {
	s := site(b)
	files, _ := filepath.Glob(filepath.Join(s.public, "wasm", "sim.*.wasm"))
	if len(files) != 1 {
		b.Fatalf("%d .wasm files in public/wasm", len(files))
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		b.Fatal(err)
	}
	var gz int
	for b.Loop() {
		gz = gzipSize(raw)
	}
	b.ReportMetric(float64(len(raw)), "wasm-bytes")
	b.ReportMetric(float64(gz), "wasm-gzip-bytes")
}

// firstResultMarks are the page's steps to its first model result, as
// marks in its performance timeline (model/client.ts, sim/run.ts).
var firstResultMarks = []string{"connlab:start", "connlab:widgets", "connlab:probed", "connlab:model-load", "connlab:model-worker", "connlab:model-compiled", "connlab:model-ready", "connlab:lab-ready", "connlab:first-result"}

func BenchmarkModelFirstResult(b *testing.B) {
	s := site(b)
	ctx := browser(b)
	labHTML, err := os.ReadFile(filepath.Join(s.public, "labs", "php-persistent-share", "index.html"))
	if err != nil {
		b.Fatal(err)
	}
	empty, err := emptyPage(labHTML)
	if err != nil {
		b.Fatal(err)
	}
	pages := http.FileServer(http.Dir(s.public))
	// The host caches the files whose names carry a content hash for good,
	// as the README asks of a host and sim serve does: a cached visit does
	// not revalidate them. Served by a plain file server (Last-Modified
	// only), the .wasm's code cache was written on every visit and used on
	// none.
	hashed := regexp.MustCompile(`\.[0-9a-f]{16,}\.[A-Za-z0-9]+$`)
	files := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hashed.MatchString(r.URL.Path) {
			w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		}
		if r.URL.Path == "/bench-empty.html" {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write(empty)
			return
		}
		pages.ServeHTTP(w, r)
	}))
	b.Cleanup(files.Close)
	measure := func(from, url, done string) map[string]float64 {
		js := `(() => { const m = {}; for (const e of performance.getEntriesByType("mark")) m[e.name] = e.startTime;
const nav = performance.getEntriesByType("navigation")[0]; if (nav) m["connlab:dom-content-loaded"] = nav.domContentLoadedEventStart;
return m[` + strconv.Quote(done) + `] ? JSON.stringify(m) : false; })()`
		if err := chromedp.Do(ctx, chromedp.Navigate(from), chromedp.Navigate(url)); err != nil {
			b.Fatal(err)
		}
		var out string
		deadline := time.Now().Add(time.Minute)
		for {
			// A poll can meet the page between two documents; ask again.
			v, err := chromedp.Run(ctx, chromedp.Poll[string](js, chromedp.WithPollingTimeout(time.Minute), chromedp.WithPollingInterval(5*time.Millisecond)))
			if err == nil {
				out = v
				break
			}
			if time.Now().After(deadline) || !strings.Contains(err.Error(), "context with specified id") {
				st, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.dataset.simModel + " " + (document.querySelector("#sim-across-requests .sim-status") || {}).textContent`))
				b.Fatalf("no %s: %v (%s)", done, err, st)
			}
		}
		var m map[string]float64
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			b.Fatal(err)
		}
		return m
	}
	// A reader comes to the lab from elsewhere (about:blank: Chromium
	// starts a new renderer process for the page), with an empty cache or
	// with the site cached; or from another page of the site, cached
	// (the renderer process of that page goes on). The last case is a
	// reference, not the lab: the lab's head alone on an empty page (its
	// model config and the script that starts the model's worker), from
	// about:blank and cached, timed until the model has read the lab. It
	// is what the model's worker costs on this machine without the page.
	labURL := files.URL + "/labs/php-persistent-share/#sim-across-requests"
	for _, c := range []struct {
		name, from, url, done string
		cached                bool
	}{
		{"cold", "about:blank", labURL, "connlab:first-result", false},
		{"cached", "about:blank", labURL, "connlab:first-result", true},
		{"cached-from-site", files.URL + "/", labURL, "connlab:first-result", true},
		{"cached-empty-page", "about:blank", files.URL + "/bench-empty.html", "connlab:lab-ready", true},
	} {
		b.Run(c.name, func(b *testing.B) {
			if _, err := chromedp.Call(ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: !c.cached}); err != nil {
				b.Fatal(err)
			}
			if c.cached {
				measure(c.from, c.url, c.done) // fills the cache
			}
			runs := map[string][]float64{}
			for b.Loop() {
				for k, v := range measure(c.from, c.url, c.done) {
					runs[k] = append(runs[k], v)
				}
			}
			b.ReportMetric(testutil.Median(runs[c.done]), "ms-to-"+strings.TrimPrefix(c.done, "connlab:"))
			// Where the time goes: each step's median time since navigation.
			for _, k := range append([]string{"connlab:dom-content-loaded"}, firstResultMarks...) {
				if k != c.done && len(runs[k]) > 0 {
					b.ReportMetric(testutil.Median(runs[k]), "ms-to-"+strings.TrimPrefix(k, "connlab:"))
				}
			}
		})
	}
}

// emptyPage is a page with the PHP lab's head alone: its model config and
// the inline script that starts the model's worker, taken from the built
// page as they are, and marks of the worker's steps as model/client.ts
// sets them, until the model has read the page's lab (its answer to
// "boot-lab", model/worker.ts).
func emptyPage(lab []byte) ([]byte, error) {
	cfg := regexp.MustCompile(`(?s)<script type="?application/json"? id="?connlab-model"?>.*?</script>`).Find(lab)
	start := regexp.MustCompile(`<script>[^<]*getElementById\("connlab-model"\)[^<]*connlabBoot[^<]*</script>`).Find(lab)
	if cfg == nil || start == nil {
		return nil, fmt.Errorf("the PHP lab's page has no model config or no script that starts the worker (layouts/_partials/model-config.html)")
	}
	marks := `<script>(()=>{const b=window.connlabBoot;if(!b)return;const mk=(n,at)=>performance.mark(n,{startTime:at-performance.timeOrigin});` +
		`b.worker.addEventListener("message",e=>{const d=e.data;if(d&&d.type==="up")mk("connlab:model-worker",d.at);else if(d&&d.type==="compiled")mk("connlab:model-compiled",d.at);` +
		`else if(d&&d.type==="ready")mk("connlab:model-ready",d.at);else if(typeof d==="string"){const m=JSON.parse(d);if(m.id==="boot-lab"&&m.type==="lab")performance.mark("connlab:lab-ready")}})})()</script>`
	return []byte("<!doctype html><html lang=en><head><meta charset=utf-8><title>empty</title>" + string(cfg) + string(start) + marks + "</head><body><p>empty</p></body></html>"), nil
}

// BenchmarkModelRerun: on each lab, the largest block of at most 10,000
// requests with a slider; a slider that keeps the run's size moved (rtt
// when there is one) and Run pressed, the time until the run is on screen
// (data-ready), measured in the page.
func BenchmarkModelRerun(b *testing.B) {
	s := site(b)
	ctx := browser(b)
	files := staticServer(b, s.public)
	for _, p := range s.pages {
		if p.lang != "en" || !strings.HasPrefix(p.file, "labs") {
			continue
		}
		best, most := "", 0.0
		for _, bl := range s.outputs[p.name].Blocks {
			n := 0.0
			for _, v := range bl.Variants {
				if r, ok := v.Summary["requests"].(float64); ok {
					n += r
				}
			}
			if n <= 10000 && n > most {
				best, most = bl.ID, n
			}
		}
		if best == "" {
			continue
		}
		b.Run(p.name+"/"+best, func(b *testing.B) {
			if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(files.URL+p.url)); err != nil {
				b.Fatal(err)
			}
			// The model ready, and every block's widget built (sim.ts builds
			// those out of view after the first run in view).
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.documentElement.dataset.simModel === "ready" && document.documentElement.dataset.simWidgets === "all"`, chromedp.WithPollingTimeout(time.Minute))); err != nil {
				b.Fatal(err)
			}
			js := fmt.Sprintf(`(async () => {
  const f = document.getElementById("sim-%[1]s");
  f.scrollIntoView();
  // A slider that keeps the run's size (not requests, duration, rate,
  // concurrency or load): the round trip when the block has it.
  const fields = [...f.querySelectorAll(".sim-field")].filter((x) => x.querySelector(".sim-slider"));
  const key = (x) => x.querySelector("label code")?.textContent ?? "";
  const sized = ["requests", "duration", "rate", "concurrency", "load"];
  const field = fields.find((x) => key(x) === "rtt") ?? fields.find((x) => !sized.includes(key(x)));
  const sl = field?.querySelector(".sim-slider");
  if (sl) { sl.value = String(+sl.value === +sl.max ? +sl.value - 1 : +sl.value + 1); sl.dispatchEvent(new Event("input", {bubbles: true})); }
  delete f.dataset.ready;
  window.connlabTrace = [];
  const t0 = performance.now();
  f.querySelector(".sim-run").click();
  while (f.dataset.ready !== "1") {
    if (f.querySelector(".sim-status").dataset.state === "error") throw new Error(f.querySelector(".sim-status").textContent);
    await new Promise((r) => setTimeout(r, 1));
  }
  const t1 = performance.now();
  const at = (s) => performance.getEntriesByName("connlab:%[1]s:" + s)[0].startTime;
  const done = window.connlabTrace.map((m) => JSON.parse(m)).findLast((m) => m.type === "done");
  const requests = done ? done.variants.reduce((n, v) => n + (v.summary?.requests ?? 0), 0) : -1;
  return [t1 - t0, at("sent") - at("run"), at("started") - at("sent"), at("done") - at("started"), at("drawn") - at("done"), done ? done.elapsed_ms : -1, requests];
})()`, best)
			var runs [7][]float64
			for b.Loop() {
				v, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](js, chromedp.EvalAwaitPromise))
				if err != nil {
					b.Fatal(err)
				}
				for i := range runs {
					runs[i] = append(runs[i], v[i])
				}
			}
			b.ReportMetric(testutil.Median(runs[0]), "ms-per-rerun")
			// Where the time goes: the page's preparation, to the model's
			// first answer, computing and streaming the run, drawing it.
			b.ReportMetric(testutil.Median(runs[1]), "ms-to-sent")
			b.ReportMetric(testutil.Median(runs[2]), "ms-sent-to-started")
			b.ReportMetric(testutil.Median(runs[3]), "ms-started-to-done")
			b.ReportMetric(testutil.Median(runs[4]), "ms-done-to-drawn")
			// The model's own time from the request to its done message,
			// as it measured it in the worker.
			b.ReportMetric(testutil.Median(runs[5]), "ms-model-elapsed")
			// The re-run's requests (the slider moved keeps the block's).
			b.ReportMetric(testutil.Median(runs[6]), "requests")
		})
	}
}
