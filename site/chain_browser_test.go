package site

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chainPane is what the chain view of one variant shows.
type chainPane struct {
	Variant string `json:"variant"`
	Tiers   string `json:"tiers"`
	Hops    []struct {
		Hop      string `json:"hop"`
		Open     int    `json:"open"`
		TWClient int    `json:"twClient"`
		TWServer int    `json:"twServer"`
		Connects int    `json:"connects"`
	} `json:"hops"`
	Rows []struct {
		Hop int  `json:"hop"`
		New bool `json:"new"`
	} `json:"rows"`
	Caption string `json:"caption"`
}

// TestBrowserChain: a block with tiers shows, in each variant's pane, the
// chain of tiers with each hop's connections and TIME_WAIT on either side
// (live from the events the model streams, then the run's totals from its
// summary), and one request's calls through every hop. Without upstream keep-alive and without a pool, the nginx →
// app and app → Redis hops leave TIME_WAIT sockets (the app's on both
// hops); with both, no hop does; the request's waterfall has a row per
// call: one into nginx, one into the app, two into Redis.
func TestBrowserChain(t *testing.T) {
	s := site(t)
	ctx := browser(t)
	base, _ := serve(t, s)
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"/labs/whole-stack/")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector("#sim-stack-gunicorn.live") !== null`,
		chromedp.WithPollingTimeout(30*time.Second))); err != nil {
		t.Fatalf("the widget did not start: %v", err)
	}
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#sim-stack-gunicorn .sim-chain").length`)); err != nil || n != 4 {
		t.Fatalf("%d chain views before a run, want one per variant (4): %v", n, err)
	}
	w, err := runWidget(ctx, "sim-stack-gunicorn")
	if err != nil {
		t.Fatal(err)
	}
	if !w.Ready {
		t.Fatalf("the run failed: %s", w.Status)
	}
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify([...document.querySelectorAll("#sim-stack-gunicorn .sim-pane")].map((p) => {
		const c = p.querySelector(".sim-chain");
		return {
			variant: p.dataset.variant, tiers: c.dataset.tiers,
			hops: [...c.querySelectorAll(".sim-chain-hop")].map((h) => ({hop: h.dataset.hop, open: +h.dataset.open,
				twClient: +h.dataset.twClient, twServer: +h.dataset.twServer, connects: +h.dataset.connects})),
			rows: [...c.querySelectorAll(".sim-chain-row")].map((r) => ({hop: +r.dataset.hop, new: r.dataset.new === "1"})),
			caption: c.querySelector("p.sim-sub:nth-of-type(2)")?.textContent || "",
		};
	}))`))
	if err != nil {
		t.Fatal(err)
	}
	var panes []chainPane
	if err := json.Unmarshal([]byte(raw), &panes); err != nil {
		t.Fatal(err)
	}
	if len(panes) != 4 {
		t.Fatalf("%d panes", len(panes))
	}
	for _, p := range panes {
		if p.Tiers != "nginx,app,redis" || len(p.Hops) != 3 {
			t.Errorf("%s: tiers %q, %d hops", p.Variant, p.Tiers, len(p.Hops))
			continue
		}
		hop := map[string]int{}
		for i, h := range p.Hops {
			hop[h.Hop] = i
		}
		ng, app, rd := p.Hops[hop["nginx"]], p.Hops[hop["app"]], p.Hops[hop["redis"]]
		if ng.Connects != 25 || ng.TWClient+ng.TWServer != 0 {
			t.Errorf("%s: the users keep their 25 connections: %+v", p.Variant, ng)
		}
		switch p.Variant {
		case "off-new":
			// Every request opened a connection into the app and one into
			// Redis (the totals: the stream may be cut short).
			if app.Connects < 5000 || rd.Connects != app.Connects {
				t.Errorf("off-new: connections opened %d into the app, %d into Redis", app.Connects, rd.Connects)
			}
			if app.TWServer == 0 || app.TWClient == 0 || rd.TWClient != rd.Connects || rd.TWServer != 0 {
				t.Errorf("off-new: TIME_WAIT app hop %d|%d, Redis hop %d|%d", app.TWClient, app.TWServer, rd.TWClient, rd.TWServer)
			}
		case "on-pool":
			if app.TWClient+app.TWServer+rd.TWClient+rd.TWServer != 0 || app.Connects > 25 {
				t.Errorf("on-pool: %+v %+v", app, rd)
			}
		}
		perHop := map[int]int{}
		for _, r := range p.Rows {
			perHop[r.Hop]++
		}
		if perHop[1] != 1 || perHop[2] != 1 || perHop[3] != 2 {
			t.Errorf("%s: one request's calls by hop %v, want 1, 1, 2", p.Variant, perHop)
		}
		if p.Variant == "off-new" {
			newConns := 0
			for _, r := range p.Rows {
				if r.New {
					newConns++
				}
			}
			if newConns != 2 { // into the app, and one Redis connection for both commands
				t.Errorf("off-new: %d of the request's calls opened a connection, want 2", newConns)
			}
		}
		if p.Caption == "" {
			t.Errorf("%s: no caption over the request's waterfall", p.Variant)
		}
	}
	t.Logf("%s", fmt.Sprint(panes[0].Hops))
	// A picture of the chain views, with the other artifacts (git-ignored).
	dir := filepath.Join(s.root, "artifacts", "browser")
	if err := os.MkdirAll(dir, 0o755); err == nil {
		chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector(".site-header").style.position = "static"`))
		if png, err := chromedp.Run(ctx, chromedp.Screenshot(chromedp.CSS("#sim-stack-gunicorn .sim-panes"))); err == nil {
			os.WriteFile(filepath.Join(dir, "en-whole-stack-chain.png"), png, 0o644)
		}
	}
}
