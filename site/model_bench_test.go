package site

// Benchmarks of the model in the page (make bench): the .wasm's size,
// compressed as a host sends it; the time from navigation to the first
// model result on the PHP lab in headless Chromium, with an empty cache
// and with the .wasm cached; and the time of a re-run after a slider move
// on each lab's largest block of at most 10,000 requests. Targets (issue
// 12): 1 MB gzipped; 1.5 s, 300 ms cached; 100 ms.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
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

func BenchmarkModelFirstResult(b *testing.B) {
	s := site(b)
	ctx := browser(b)
	files := staticServer(b, s.public)
	url := files.URL + "/labs/php-persistent-share/#sim-across-requests"
	measure := func() float64 {
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(url)); err != nil {
			b.Fatal(err)
		}
		v, err := chromedp.Run(ctx, chromedp.Poll[float64](`(() => { const m = performance.getEntriesByName("connlab:first-result")[0]; return m ? m.startTime : false; })()`,
			chromedp.WithPollingTimeout(time.Minute), chromedp.WithPollingInterval(5*time.Millisecond)))
		if err != nil {
			st, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.dataset.simModel + " " + document.querySelector("#sim-across-requests .sim-status").textContent`))
			b.Fatalf("no model result: %v (%s)", err, st)
		}
		return v
	}
	for _, cached := range []bool{false, true} {
		name := "cold"
		if cached {
			name = "cached"
		}
		b.Run(name, func(b *testing.B) {
			if _, err := chromedp.Call(ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: !cached}); err != nil {
				b.Fatal(err)
			}
			if cached {
				measure() // fills the cache
			}
			total, n := 0.0, 0
			for b.Loop() {
				total += measure()
				n++
			}
			b.ReportMetric(total/float64(n), "ms-to-first-result")
		})
	}
}

// BenchmarkModelRerun: on each lab, the largest block of at most 10,000
// requests with a slider; a slider moved and Run pressed, the time until
// the run is on screen (data-ready), measured in the page.
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
			if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.documentElement.dataset.simModel === "ready"`, chromedp.WithPollingTimeout(time.Minute))); err != nil {
				b.Fatal(err)
			}
			js := fmt.Sprintf(`(async () => {
  const f = document.getElementById("sim-%s");
  f.scrollIntoView();
  const sl = f.querySelector(".sim-slider");
  if (sl) { sl.value = String(+sl.value === +sl.max ? +sl.value - 1 : +sl.value + 1); sl.dispatchEvent(new Event("input", {bubbles: true})); }
  delete f.dataset.ready;
  const t0 = performance.now();
  f.querySelector(".sim-run").click();
  while (f.dataset.ready !== "1") {
    if (f.querySelector(".sim-status").dataset.state === "error") throw new Error(f.querySelector(".sim-status").textContent);
    await new Promise((r) => setTimeout(r, 1));
  }
  return performance.now() - t0;
})()`, best)
			total, n := 0.0, 0
			for b.Loop() {
				v, err := chromedp.Run(ctx, chromedp.Evaluate[float64](js, chromedp.EvalAwaitPromise))
				if err != nil {
					b.Fatal(err)
				}
				total += v
				n++
			}
			b.ReportMetric(total/float64(n), "ms-per-rerun")
			b.ReportMetric(most, "requests")
		})
	}
}
