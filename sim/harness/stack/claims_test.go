package stack

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/connlab/connlab/internal/testutil"
)

// The whole-stack lab's statements about the real stack, held to the recorded
// runs (labs/nginx-keepalive.stack-runs.json). Each test names the words
// the page uses, checks that both languages still say them, and checks
// the record: a page that changes its claim, or a record that stops
// supporting it, fails here.

const (
	recordFile = "../../../labs/nginx-keepalive.stack-runs.json"
	labFile    = "../../../labs/whole-stack.md"
	labFileKo  = "../../../labs/whole-stack.ko.md"
	nginxLab   = "../../../labs/nginx-keepalive.md"
	nginxLabKo = "../../../labs/nginx-keepalive.ko.md"
)

func readRecordFile(t *testing.T) *Record {
	t.Helper()
	return readRecordAt(t, recordFile)
}

// readRecordAt reads the record of runs at path.
func readRecordAt(t *testing.T, path string) *Record {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// says checks that the lab states claim (whitespace-insensitive) in
// English and, in Korean, koClaim.
func says(t *testing.T, claim, koClaim string) {
	t.Helper()
	pageSays(t, labFile, labFileKo, claim, koClaim)
}

// pageSays checks that the lab in en (English) and ko (its Korean
// translation) states claim and koClaim, whitespace-insensitive.
func pageSays(t *testing.T, en, ko, claim, koClaim string) {
	t.Helper()
	for file, c := range map[string]string{en: claim, ko: koClaim} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		norm := func(s string) string { return strings.Join(strings.Fields(s), " ") }
		if !strings.Contains(norm(string(b)), norm(c)) {
			t.Errorf("%s no longer says %q: update this test with the page", filepath.Base(file), c)
		}
	}
}

func hopOf(r *Result, name string) HopResult {
	for _, h := range r.Hops {
		if h.Name == name {
			return h
		}
	}
	return HopResult{}
}

// TestClaimRaceShares: the app's side closes first for about two thirds
// of gunicorn's connections and about a third of Flask's server's
// (medians), from under a fifth to nearly all across runs; the nginx lab
// and the home page say the same of gunicorn's alone.
func TestClaimRaceShares(t *testing.T) {
	says(t, "the app's side won it for about two thirds of gunicorn's connections and about a third of Flask's server's",
		"앱 쪽이 이긴 비율은 gunicorn 연결의 약 삼분의 이, Flask 서버 연결의 약 삼분의 일")
	r := readRecordFile(t)
	shares := map[string][]float64{}
	for _, run := range r.Runs {
		if run.Keepalive != 0 && run.AppServer != Flask {
			continue
		}
		h := hopOf(run, "app")
		closed := h.TimeWaitClient + h.TimeWaitServer - h.TimeWaitBoth
		if closed < 100 {
			continue
		}
		shares[run.AppServer] = append(shares[run.AppServer], float64(h.TimeWaitServer-h.TimeWaitBoth)/float64(closed))
	}
	g, f := testutil.Median(shares[Gunicorn]), testutil.Median(shares[Flask])
	if g < 0.55 || g > 0.75 {
		t.Errorf("gunicorn: the app closed first for %.2f (median of %d runs), not about two thirds", g, len(shares[Gunicorn]))
	}
	if f < 0.25 || f > 0.42 {
		t.Errorf("Flask's server: %.2f (median of %d runs), not about a third", f, len(shares[Flask]))
	}
	all := append(slices.Clone(shares[Gunicorn]), shares[Flask]...)
	if slices.Min(all) >= 0.2 || slices.Max(all) <= 0.9 {
		t.Errorf("shares from %.2f to %.2f: not from under a fifth to nearly all", slices.Min(all), slices.Max(all))
	}
	// The nginx lab and the home page say both of gunicorn alone.
	pageSays(t, nginxLab, nginxLabKo,
		"the app's side won it for about two thirds of gunicorn's connections (the median over the recorded runs), from under a fifth to nearly all from run to run",
		"gunicorn 연결의 약 삼분의 이에서 앱 쪽이 이겼습니다(기록된 실행들의 중앙값). 이 비율은 실행마다 오분의 일 아래부터 거의 전부까지 움직였고")
	pageSays(t, "../../../content/_index.md", "../../../content/_index.ko.md",
		"the app's side won that race for about two thirds of gunicorn's connections (the median over the recorded runs; from under a fifth to nearly all from run to run)",
		"gunicorn 연결의 약 삼분의 이에서 앱 쪽이 이겼습니다(기록된 실행들의 중앙값. 실행마다 오분의 일 아래부터 거의 전부까지 움직였습니다)")
	if lo, hi := slices.Min(shares[Gunicorn]), slices.Max(shares[Gunicorn]); lo >= 0.2 || hi <= 0.9 {
		t.Errorf("gunicorn's shares from %.2f to %.2f: not from under a fifth to nearly all", lo, hi)
	}
}

// TestClaimChurn: with keepalive 1 nginx opened about one connection for
// every two requests, with four about one for every five to ten, with 32
// none (batch G: gunicorn, a Redis pool, 25 users keeping their
// connections); the load's stalls came a few hundred times a second, now
// and then over ten milliseconds long.
func TestClaimChurn(t *testing.T) {
	says(t, "with `keepalive 1` nginx opened about one new connection for every two requests, with four kept per worker about one for every five to ten, with `keepalive 32` none",
		"`keepalive 1`에서는 요청 두 개에 새 연결 하나꼴, 워커마다 넷을 두면 요청 다섯에서 열 개에 하나꼴, `keepalive 32`에서는 하나도")
	r := readRecordFile(t)
	byN := map[int][]float64{}
	var stalls, p99s []float64
	for _, run := range r.Runs {
		if !strings.HasSuffix(run.Name, "/G") {
			continue
		}
		h := hopOf(run, "app")
		byN[run.Keepalive] = append(byN[run.Keepalive], float64(h.TimeWaitClient)/float64(run.Requests))
		stalls = append(stalls, run.LoadStallsPerS)
		p99s = append(p99s, run.LoadStallMS["p99"])
	}
	check := func(n int, lo, hi float64, says string) {
		if len(byN[n]) == 0 {
			t.Fatalf("no batch G run with keepalive %d", n)
		}
		for _, c := range byN[n] {
			if c < lo || c > hi {
				t.Errorf("keepalive %d: %.3f new connections per request, not %s", n, c, says)
			}
		}
	}
	check(1, 0.4, 0.62, "about one for every two requests")
	check(4, 0.08, 0.22, "one for every five to ten")
	check(32, 0, 0, "none")
	if m := testutil.Median(stalls); m < 100 || m >= 1000 {
		t.Errorf("the load stalled %.0f times a second (median), not a few hundred", m)
	}
	if m := testutil.Median(p99s); m <= 10 {
		t.Errorf("stalls' 99th percentile %.1f ms (median over runs), not now and then over ten milliseconds", m)
	}
}

// TestClaimSiege: the half-minute siege runs with the kernel's defaults:
// with Flask's server, keep-alive served about as many requests a second
// and left as many TIME_WAIT sockets; with gunicorn, about ten thousand
// fewer and about a tenth more requests a second.
func TestClaimSiege(t *testing.T) {
	says(t, "left about ten thousand fewer, and served about a tenth more requests a second",
		"약 만 개 적게 남겼고, 초당 요청은 10 %쯤 더 처리했습니다")
	r := readRecordFile(t)
	type row struct{ rps, tw float64 }
	got := map[string]row{}
	for _, run := range r.Runs {
		if !strings.HasSuffix(run.Name, "/kernel-defaults") || run.Load.Kind != LoadSiege {
			continue
		}
		tw := 0
		for _, h := range run.Hops {
			tw += h.TimeWaitClient + h.TimeWaitServer
		}
		key := run.AppServer + map[bool]string{true: "/on", false: "/off"}[run.Keepalive > 0]
		got[key] = row{run.ThroughputRPS, float64(tw)}
	}
	fo, fn, go_, gn := got["flask/off"], got["flask/on"], got["gunicorn/off"], got["gunicorn/on"]
	if fo.rps == 0 || fn.rps == 0 || go_.rps == 0 || gn.rps == 0 {
		t.Fatalf("the record lacks a siege run with the kernel's defaults: %v", got)
	}
	if x := fn.rps / fo.rps; x < 0.9 || x > 1.1 {
		t.Errorf("Flask: keep-alive served %.2f× the requests, not about as many", x)
	}
	if x := fn.tw / fo.tw; x < 0.9 || x > 1.1 {
		t.Errorf("Flask: keep-alive left %.2f× the TIME_WAIT sockets, not as many", x)
	}
	if d := go_.tw - gn.tw; d < 8000 || d > 12500 {
		t.Errorf("gunicorn: %.0f fewer TIME_WAIT sockets with keep-alive, not about ten thousand", d)
	}
	if x := gn.rps / go_.rps; x < 1.05 || x > 1.16 {
		t.Errorf("gunicorn: keep-alive served %.2f× the requests, not about a tenth more", x)
	}
}

// The siege runs' keep-alive gain with gunicorn, in requests a second, as
// the whole-stack and nginx labs quote it: lowest, median, highest, over
// the pairs of runs without and with keep-alive.
const (
	siegeGainLow    = -9
	siegeGainMedian = 180
	siegeGainHigh   = 463
	siegePairs      = 5
	// The source article's gain with keep-alive, in transactions a second.
	articleGain = 200
)

// siegeGains pairs each gunicorn siege run without upstream keep-alive
// with the next run of the same round, Redis mode and load that has it,
// and returns keep-alive's throughput gain in each pair.
func siegeGains(t *testing.T, r *Record) []float64 {
	t.Helper()
	// A run's round, Redis mode and load, without its keepalive: the
	// name is app/kaN/redis/load[/batch].
	round := func(run *Result) string {
		parts := strings.Split(run.Name, "/")
		if len(parts) < 4 {
			t.Fatalf("run name %q: want app/kaN/redis/load", run.Name)
		}
		parts[1] = ""
		return strings.Join(parts, "/")
	}
	var gains []float64
	for i, off := range r.Runs {
		if off.AppServer != Gunicorn || off.Load.Kind != LoadSiege || off.Keepalive != 0 {
			continue
		}
		if off.Load.Concurrency != 25 || off.Load.KeepAlive {
			t.Fatalf("run %s: %d siege users keeping %v, not the pages' 25 users with siege's connection = close", off.Name, off.Load.Concurrency, off.Load.KeepAlive)
		}
		paired := false
		for _, on := range r.Runs[i+1:] {
			if on.Keepalive == 0 && round(on) == round(off) {
				break // the next round's run without keep-alive: no pair
			}
			if on.Keepalive > 0 && on.AppServer == off.AppServer && on.Redis == off.Redis && round(on) == round(off) {
				gains = append(gains, on.ThroughputRPS-off.ThroughputRPS)
				paired = true
				break
			}
		}
		if !paired {
			t.Fatalf("run %s has no run with keep-alive after it", off.Name)
		}
	}
	return gains
}

// TestClaimSiegeSpread: over the pairs of gunicorn siege runs, keep-alive's
// gain ranged from −9 to +463 requests a second, median +180: the article's
// +200 from one pair cannot be told from that spread.
func TestClaimSiegeSpread(t *testing.T) {
	says(t, "the gain ranged from −9 to +463 requests a second, median +180",
		"초당 −9부터 +463까지였고 중앙값은 +180이었습니다")
	says(t, "over five pairs of siege runs", "siege 실행 5쌍")
	pageSays(t, nginxLab, nginxLabKo,
		"over five pairs of siege runs the gain ranged from −9 to +463 requests a second, median +180",
		"siege 실행 5쌍을 돌려 보니 늘어난 처리량은 초당 −9부터 +463까지였고 중앙값은 +180이었습니다")
	gains := siegeGains(t, readRecordFile(t))
	if len(gains) != siegePairs {
		t.Fatalf("%d pairs of gunicorn siege runs; the pages say %d", len(gains), siegePairs)
	}
	lo, med, hi := slices.Min(gains), testutil.Median(gains), slices.Max(gains)
	t.Logf("keep-alive's gain over %d pairs: %.1f, median %.1f, %.1f requests a second (all: %.1f)", len(gains), lo, med, hi, gains)
	for _, c := range []struct {
		what      string
		got, says float64
	}{{"lowest", lo, siegeGainLow}, {"median", med, siegeGainMedian}, {"highest", hi, siegeGainHigh}} {
		if math.Round(c.got) != c.says {
			t.Errorf("the %s gain is %.1f requests a second; the pages say %+.0f", c.what, c.got, c.says)
		}
	}
	// "Cannot be told from noise": the article's gain lies inside the
	// spread, which is wider than the gain itself.
	if !(lo < articleGain && articleGain < hi) || hi-lo <= articleGain {
		t.Errorf("gains from %.0f to %.0f: the article's +%d is not lost in that spread", lo, hi, articleGain)
	}
}

// TestClaimNoise: over two rounds of the four variants (batch H), the
// counts were the same in every run but the throughput was not: the same
// variant differed by up to half, and the variants did not come out in the
// same order twice.
func TestClaimNoise(t *testing.T) {
	says(t, "The same variant's throughput differed by up to half between the two rounds, and the four variants did not come out in the same order twice",
		"같은 변형의 처리량이 두 차례 사이에 절반까지 달랐고, 네 변형의 순서도 두 번 같게 나온 적이 없습니다")
	r := readRecordFile(t)
	type key struct {
		app, redis string
		ka         int
	}
	rounds := map[key][]float64{}
	order := map[string][][]key{}
	var round []*Result
	for _, run := range r.Runs {
		if !strings.HasSuffix(run.Name, "/H") {
			continue
		}
		k := key{run.AppServer, run.Redis, run.Keepalive}
		rounds[k] = append(rounds[k], run.ThroughputRPS)
		round = append(round, run)
		rd, app := hopOf(run, "redis"), hopOf(run, "app")
		perReq := float64(rd.TimeWaitClient) / float64(run.Requests)
		switch {
		case run.Redis == RedisNew && (perReq < 0.9 || perReq > 1.1):
			t.Errorf("%s: %.2f Redis TIME_WAIT sockets per request, not one", run.Name, perReq)
		case run.Redis == RedisPool && rd.Connects > 30:
			t.Errorf("%s: %d Redis connections opened with the pool", run.Name, rd.Connects)
		}
		if run.AppServer == Gunicorn && run.Keepalive > 0 && app.Connects > 5 {
			t.Errorf("%s: %d connections opened to gunicorn with keep-alive", run.Name, app.Connects)
		}
	}
	if len(round) != 16 {
		t.Fatalf("batch H has %d runs, want 16 (2 rounds × 2 apps × 4 variants)", len(round))
	}
	most := 0.0
	for k, xs := range rounds {
		if len(xs) != 2 {
			t.Fatalf("%v ran %d times", k, len(xs))
		}
		most = max(most, max(xs[0], xs[1])/min(xs[0], xs[1]))
	}
	if most < 1.4 {
		t.Errorf("the same variant's throughput differed by at most %.2f×, not up to half", most)
	}
	for _, app := range []string{Gunicorn, Flask} {
		var ranks [2][]key
		for i := range 2 {
			var ks []key
			for k := range rounds {
				if k.app == app {
					ks = append(ks, k)
				}
			}
			sort.Slice(ks, func(a, b int) bool { return rounds[ks[a]][i] > rounds[ks[b]][i] })
			ranks[i] = ks
		}
		order[app] = ranks[:]
		if slices.Equal(ranks[0], ranks[1]) {
			t.Errorf("%s: the variants came out in the same order in both rounds: %v", app, ranks[0])
		}
	}
}
