// Command gen writes chromium.har, the HAR test file of sim/measure: headless
// Chromium (through chromedp) loads a page from a loopback HTTP server, and
// the page fetches from the project's HTTPS upstream (the server of `sim
// upstream`), some calls one after another (reused connections), some at
// once (new ones). The HAR is written from the Chrome DevTools Protocol's
// Network events, with the timing rules of Chromium DevTools' own HAR
// export (front_end/models/har/Log.ts). It lives under testdata so that
// `go list ./...` does not see it.
//
//	go run ./sim/measure/testdata/gen -out sim/measure/testdata/chromium.har
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness"
)

// The HAR 1.2 fields the importer reads, and a few more that DevTools writes.
type harFile struct {
	Log harLog `json:"log"`
}

type harLog struct {
	Version string            `json:"version"`
	Creator map[string]string `json:"creator"`
	Browser map[string]string `json:"browser"`
	Pages   []any             `json:"pages"`
	Entries []harEntry        `json:"entries"`
}

type harEntry struct {
	StartedDateTime string         `json:"startedDateTime"`
	Time            float64        `json:"time"`
	Request         map[string]any `json:"request"`
	Response        map[string]any `json:"response"`
	Cache           map[string]any `json:"cache"`
	Timings         harTimings     `json:"timings"`
	ServerIPAddress string         `json:"serverIPAddress,omitempty"`
	Connection      string         `json:"connection,omitempty"`
}

type harTimings struct {
	Blocked float64 `json:"blocked"`
	DNS     float64 `json:"dns"`
	SSL     float64 `json:"ssl"`
	Connect float64 `json:"connect"`
	Send    float64 `json:"send"`
	Wait    float64 `json:"wait"`
	Receive float64 `json:"receive"`
}

// request is what the Network events told about one request.
type request struct {
	id       network.RequestID
	url      string
	method   string
	wall     time.Time
	start    float64 // monotonic seconds, when the request was issued
	resp     *network.Response
	received float64 // when the response's headers arrived
	end      float64 // loadingFinished
	done     bool
}

func main() {
	out := flag.String("out", "chromium.har", "the HAR file to write")
	chromium := flag.String("chromium", "chromium", "the Chromium binary")
	flag.Parse()
	if err := run(*out, *chromium); err != nil {
		log.Fatal(err)
	}
}

func run(out, chromium string) error {
	path, err := exec.LookPath(chromium)
	if err != nil {
		return err
	}
	// The upstream of `sim upstream --rtt 10ms`, on loopback.
	s := sim.Default()
	if err := s.Set("rtt", "10ms"); err != nil {
		return err
	}
	srv, err := harness.StartServers("127.0.0.1:0", "127.0.0.1:0", s)
	if err != nil {
		return err
	}
	defer srv.Close()
	up := "https://" + srv.Upstream.Addr() + "/"

	// The page: two files of its own, then three fetches in turn and three
	// at once from the upstream.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	page := fmt.Sprintf(`<!doctype html><title>loading</title>
<link rel=stylesheet href=/style.css><script src=/app.js></script>
<script>
const u = %q;
addEventListener("load", async () => {
  for (let i = 0; i < 3; i++) await fetch(u + "seq/" + i, {mode: "no-cors", cache: "no-store"});
  await Promise.all([0, 1, 2].map(i => fetch(u + "par/" + i, {mode: "no-cors", cache: "no-store"})));
  document.title = "done";
});
</script>`, up)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, page)
		case "/style.css":
			w.Header().Set("Content-Type", "text/css")
			fmt.Fprint(w, "body { font: 16px sans-serif }")
		case "/app.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprint(w, "console.log('app')")
		default:
			http.NotFound(w, r)
		}
	})
	hs := &http.Server{Handler: mux}
	go hs.Serve(ln)
	defer hs.Close()
	pageURL := "http://" + ln.Addr().String() + "/"

	profile, err := os.MkdirTemp("", "connlab-har-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(profile)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.UserDataDir(profile),
		// The upstream's CA is made at start; Chromium is not told to
		// trust it, only to go on.
		chromedp.Flag("ignore-certificate-errors", true),
		// No name resolves: the page and upstream are IP literals on
		// loopback, and nothing else may be reached.
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.Env("TMPDIR=" + profile),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	tab, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	ctx, cancel := context.WithTimeout(tab, 60*time.Second)
	defer cancel()

	var mu sync.Mutex
	reqs := map[network.RequestID]*request{}
	var order []*request
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *network.EventRequestWillBeSent:
			if e.Request.URL == "" || e.Request.URL[:4] != "http" {
				return
			}
			wall := e.WallTime.Float64()
			r := &request{id: e.RequestID, url: e.Request.URL, method: e.Request.Method,
				wall: time.Unix(0, int64(wall*1e9)), start: e.Timestamp.Float64()}
			reqs[e.RequestID] = r
			order = append(order, r)
		case *network.EventResponseReceived:
			if r := reqs[e.RequestID]; r != nil {
				r.resp = e.Response
				r.received = e.Timestamp.Float64()
			}
		case *network.EventLoadingFinished:
			if r := reqs[e.RequestID]; r != nil {
				r.end = e.Timestamp.Float64()
				r.done = true
			}
		}
	}); err != nil {
		return err
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		return err
	}
	if _, err := chromedp.Call(ctx, network.SetCacheDisabled, network.SetCacheDisabledParams{CacheDisabled: true}); err != nil {
		return err
	}
	if err := chromedp.Do(ctx,
		chromedp.Navigate(pageURL),
		chromedp.Poll[chromedp.Void](`document.title === "done"`),
		chromedp.Sleep(500*time.Millisecond),
	); err != nil {
		return err
	}
	version, err := chromedp.Run(ctx, chromedp.Evaluate[string](`navigator.userAgent`))
	if err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	h := harFile{Log: harLog{
		Version: "1.2",
		Creator: map[string]string{"name": "connlab sim/measure/testdata/gen (from CDP Network events)", "version": "1"},
		Browser: map[string]string{"name": "Chromium (headless, chromedp)", "version": version},
		Pages:   []any{},
		Entries: []harEntry{},
	}}
	for _, r := range order {
		if r.resp == nil || !r.done {
			continue
		}
		h.Log.Entries = append(h.Log.Entries, entry(r))
	}
	sort.SliceStable(h.Log.Entries, func(i, j int) bool {
		return h.Log.Entries[i].StartedDateTime < h.Log.Entries[j].StartedDateTime
	})
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "%d entries\n", len(h.Log.Entries))
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

// ms rounds to DevTools' precision (three decimals).
func ms(v float64) float64 { return math.Round(v*1000) / 1000 }

// entry turns one request into a HAR entry as DevTools' exporter does:
// blocked is the queueing before the request started plus the stall before
// the first of dns, connect and send; dns and connect are -1 when they did
// not happen (a reused connection); ssl is inside connect.
func entry(r *request) harEntry {
	t := r.resp.Timing
	tm := harTimings{Blocked: -1, DNS: -1, SSL: -1, Connect: -1}
	highest := 0.0
	reqTime := r.start
	if t != nil {
		reqTime = t.RequestTime
		queued := -1.0
		if r.start < t.RequestTime {
			queued = (t.RequestTime - r.start) * 1000
		}
		tm.Blocked = queued
		blockedStart := math.Inf(1)
		for _, v := range []float64{t.DNSStart, t.ConnectStart, t.SendStart} {
			if v >= 0 && v < blockedStart {
				blockedStart = v
			}
		}
		if !math.IsInf(blockedStart, 1) {
			tm.Blocked += blockedStart
		} else {
			blockedStart = 0
		}
		dnsStart, dnsEnd := 0.0, -1.0
		if t.DNSEnd >= 0 {
			dnsStart, dnsEnd = blockedStart, t.DNSEnd
		}
		tm.DNS = dnsEnd - dnsStart
		connStart, connEnd := 0.0, -1.0
		if t.ConnectEnd >= 0 {
			connStart, connEnd = dnsEnd, t.ConnectEnd
		}
		tm.Connect = connEnd - connStart
		sendStart, sendEnd := 0.0, 0.0
		if t.SendEnd >= 0 {
			sendStart, sendEnd = math.Max(math.Max(connEnd, dnsEnd), blockedStart), t.SendEnd
		}
		tm.Send = math.Max(sendEnd-sendStart, 0)
		highest = math.Max(math.Max(sendEnd, connEnd), math.Max(dnsEnd, math.Max(blockedStart, 0)))
		if t.SslStart >= 0 && t.SslEnd >= 0 {
			tm.SSL = t.SslEnd - t.SslStart
		}
	}
	waitEnd := (r.received - reqTime) * 1000
	if t != nil && t.ReceiveHeadersEnd > 0 {
		waitEnd = t.ReceiveHeadersEnd
	}
	tm.Wait = waitEnd - highest
	tm.Receive = math.Max((r.end-reqTime)*1000-waitEnd, 0)
	for _, p := range []*float64{&tm.Blocked, &tm.DNS, &tm.SSL, &tm.Connect, &tm.Send, &tm.Wait, &tm.Receive} {
		*p = ms(*p)
	}
	total := 0.0
	for _, v := range []float64{tm.Blocked, tm.DNS, tm.Connect, tm.Send, tm.Wait, tm.Receive} {
		total += math.Max(v, 0)
	}
	e := harEntry{
		StartedDateTime: r.wall.UTC().Format("2006-01-02T15:04:05.000Z"),
		Time:            ms(total),
		Request:         map[string]any{"method": r.method, "url": r.url, "httpVersion": r.resp.Protocol, "headers": []any{}, "queryString": []any{}, "cookies": []any{}, "headersSize": -1, "bodySize": 0},
		Response:        map[string]any{"status": r.resp.Status, "statusText": r.resp.StatusText, "httpVersion": r.resp.Protocol, "headers": []any{}, "cookies": []any{}, "content": map[string]any{"size": 0, "mimeType": r.resp.MimeType}, "redirectURL": "", "headersSize": -1, "bodySize": -1},
		Cache:           map[string]any{},
		Timings:         tm,
		ServerIPAddress: r.resp.RemoteIPAddress,
	}
	if r.resp.ConnectionID != 0 {
		e.Connection = strconv.FormatFloat(r.resp.ConnectionID, 'f', -1, 64)
	}
	return e
}
