package stack

import (
	"os"
	"testing"

	"github.com/connlab/connlab/internal/testutil"
	"github.com/connlab/connlab/sim/lab"
)

// The stack-connections lab's statements about how the real stack's
// worker processes share their tier's work, held to the runs recorded for
// it (labs/stack-connections.stack-runs.json), made with the tiers block's
// settings:
//
//	stackrun -app gunicorn -redis pool -keepalive 8 -load go -c 60 \
//	  -nginx-workers 2 -gunicorn-workers 4 -gunicorn-threads 4 -d 5s \
//	  -repeat 20 -tag spread -quiet 1.5 -o labs/stack-connections.stack-runs.json
//
// The page states the record's figures in words; each is checked here
// against the record, so a page or a record that changes alone fails.

const (
	spreadRecord = "../../../labs/stack-connections.stack-runs.json"
	spreadLab    = "../../../labs/stack-connections.md"
	spreadLabKo  = "../../../labs/stack-connections.ko.md"
)

// Where one process did "nine tenths or more" of its tier's work, and
// where the app's work "was shared": no gunicorn process did more than two
// fifths.
const (
	oneDid    = 0.9
	sharedMax = 0.4
)

// spreadRuns reads the record and checks that every run is the tiers
// block's stack: its workers, threads, keepalive and users.
func spreadRuns(t *testing.T) []*Result {
	t.Helper()
	src, err := os.ReadFile(spreadLab)
	if err != nil {
		t.Fatal(err)
	}
	l, err := lab.Parse(spreadLab, src)
	if err != nil {
		t.Fatal(err)
	}
	b, err := l.Block("tiers")
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.Scenario(b.Variant("base"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ng, app := s.TierScenario(0), s.TierScenario(1)
	// The key the page names takes a spread on this block.
	given, err := b.Scenario(b.Variant("base"), []lab.Setting{{Key: "tier.nginx.worker_shares", Value: "1,0"}})
	if err == nil {
		err = given.Validate()
	}
	if err != nil {
		t.Errorf("worker_shares on the tiers block: %v", err)
	}
	runs := readRecordAt(t, spreadRecord).Runs
	if len(runs) < 10 {
		t.Fatalf("%d recorded runs: too few to count", len(runs))
	}
	for _, r := range runs {
		if r.AppServer != Gunicorn || r.NginxWorkers != ng.Workers || r.Keepalive != ng.UpstreamKeepalive ||
			r.AppWorkers != app.Workers || r.AppThreads != app.Threads || r.Redis != RedisPool ||
			r.Load.Concurrency != s.Concurrency || r.Load.KeepAlive != s.ClientKeepalive {
			t.Fatalf("run %s is not the tiers block's stack (%d nginx workers, keepalive %d, %d×%d gunicorn, redis %s, %d users keeping %v)",
				r.Name, r.NginxWorkers, r.Keepalive, r.AppWorkers, r.AppThreads, r.Redis, r.Load.Concurrency, r.Load.KeepAlive)
		}
		if len(r.WorkerShares["nginx"]) != ng.Workers || len(r.WorkerShares["app"]) != app.Workers {
			t.Fatalf("run %s: worker shares %v, not one per process", r.Name, r.WorkerShares)
		}
	}
	return runs
}

// TestClaimWorkerSpread: how often one process did nearly all of its
// tier's work, and what that did to throughput.
func TestClaimWorkerSpread(t *testing.T) {
	runs := spreadRuns(t)
	var ngOne int
	var oneRPS, sharedRPS []float64
	for _, r := range runs {
		if r.WorkerShares["nginx"][0] >= oneDid { // largest first
			ngOne++
		}
		switch top := r.WorkerShares["app"][0]; {
		case top >= oneDid:
			oneRPS = append(oneRPS, r.ThroughputRPS)
		case top <= sharedMax:
			sharedRPS = append(sharedRPS, r.ThroughputRPS)
		}
	}
	pageSays(t, spreadLab, spreadLabKo, "In twenty recorded runs of this stack", "이 스택을 기록한 스무 번의 실행")
	if len(runs) != 20 {
		t.Errorf("%d recorded runs; the page says twenty", len(runs))
	}
	// part checks that a fraction of the runs is the page's "n out of m".
	part := func(what string, k int, lo, hi float64, words string) {
		if f := float64(k) / float64(len(runs)); f < lo || f > hi {
			t.Errorf("%s in %d of %d runs (%.2f), not %s", what, k, len(runs), f, words)
		}
	}
	pageSays(t, spreadLab, spreadLabKo,
		"one of nginx's two workers did nine tenths or more of nginx's work in three runs out of four",
		"네 번 중 세 번꼴로 nginx 워커 둘 중 하나가 nginx 일의 열에 아홉 이상을 했고")
	part("one nginx worker did nine tenths or more", ngOne, 0.7, 0.8, "three out of four")
	pageSays(t, spreadLab, spreadLabKo,
		"one gunicorn process did as much of the app's in one run out of five",
		"다섯 번 중 한 번꼴로 gunicorn 프로세스 하나가 앱 일을 그만큼 했습니다")
	part("one app process did nine tenths or more", len(oneRPS), 0.15, 0.25, "one out of five")

	// "When the work was shared": no app process did more than two fifths.
	if len(oneRPS) == 0 || len(sharedRPS) < len(runs)/4 {
		t.Fatalf("%d runs with one app process at nine tenths or more, %d with the work shared: too few to compare", len(oneRPS), len(sharedRPS))
	}
	if ratio := testutil.Median(oneRPS) / testutil.Median(sharedRPS); ratio >= 0.5 {
		t.Errorf("runs where one app process did the work answered %.0f requests a second (median), %.2f of the shared runs' %.0f: not less than half",
			testutil.Median(oneRPS), ratio, testutil.Median(sharedRPS))
	}
	pageSays(t, spreadLab, spreadLabKo,
		"answering under half as many requests a second as when the work was shared",
		"그 실행들은 일이 나뉜 실행들의 절반도 안 되는 요청을 초마다 처리했습니다")
	pageSays(t, spreadLab, spreadLabKo,
		"**Run real** gives the model the measured parts (`worker_shares`)",
		"**실제로 실행**은 잰 몫을 모델에 넘깁니다(`worker_shares`)")
}

// Past these, nginx opened "more than a thousand" new connections to the
// app during a run, or "fewer than fifty".
const (
	manyConnects = 1000
	fewConnects  = 50
)

// TestClaimSpreadFollowsConnects: the app's work was shared (no process
// over two fifths) in every run where nginx opened many new connections
// to it, and in none where it opened few: nginx's requests stay on the
// connections it keeps, with the processes that accepted them.
func TestClaimSpreadFollowsConnects(t *testing.T) {
	runs := spreadRuns(t)
	var many, few int
	for _, r := range runs {
		app := hopOf(r, "app")
		if app.Name == "" {
			t.Fatalf("run %s has no app hop", r.Name)
		}
		top := r.WorkerShares["app"][0] // largest first
		switch {
		case app.Connects > manyConnects:
			many++
			if top > sharedMax {
				t.Errorf("run %s: nginx opened %d connections to the app, yet one process did %.2f of its work: not shared", r.Name, app.Connects, top)
			}
		case app.Connects < fewConnects:
			few++
			if top <= sharedMax {
				t.Errorf("run %s: nginx opened only %d connections to the app, yet no process did more than %.2f of its work: shared", r.Name, app.Connects, top)
			}
		}
	}
	// "Every run" and "none" mean something only with a few runs of each.
	if many < 3 || few < 3 {
		t.Errorf("%d runs with more than %d new connections to the app and %d with fewer than %d: too few to say every or none",
			many, manyConnects, few, fewConnects)
	}
	pageSays(t, spreadLab, spreadLabKo,
		"The app's work was shared in every run where nginx opened more than a thousand new connections to it, and in none where it opened fewer than fifty: a kept connection stays with the process that accepted it.",
		"nginx가 앱으로 새 연결을 천 개 넘게 연 실행에서는 모두 앱의 일이 나뉘었고, 쉰 개도 열지 않은 실행에서는 한 번도 나뉘지 않았습니다. 유지되는 연결은 그것을 받아들인 프로세스에 머물기 때문입니다.")
}
