package sim

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/connlab/connlab/internal/testutil"
)

// realRecord is the part of a recorded real run (sim/harness/stack's
// Record) these tests read.
type realRecord struct {
	Software map[string]string `json:"software"`
	Runs     []struct {
		Name      string `json:"name"`
		AppServer string `json:"app_server"`
		Redis     string `json:"redis"`
		Keepalive int    `json:"upstream_keepalive"`
		Requests  int    `json:"requests"`
		Load      struct {
			Kind      string `json:"kind"`
			KeepAlive bool   `json:"client_keepalive"`
		} `json:"load"`
		Hops []struct {
			Name     string `json:"name"`
			Connects int    `json:"connects"`
			Client   int    `json:"time_wait_client"`
			Server   int    `json:"time_wait_server"`
			Both     int    `json:"time_wait_both"`
		} `json:"hops"`
	} `json:"runs"`
}

const realRecordFile = "../labs/nginx-keepalive.stack-runs.json"

func readRealRecord(t *testing.T) *realRecord {
	t.Helper()
	b, err := os.ReadFile(realRecordFile)
	if err != nil {
		t.Fatal(err)
	}
	var r realRecord
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", realRecordFile, err)
	}
	if len(r.Runs) == 0 {
		t.Fatalf("%s: no runs", realRecordFile)
	}
	return &r
}

// shares returns, for the runs that pass keep, the median share of a hop's
// connections (each counted once) whose TIME_WAIT was on the accepting
// side alone and on both sides.
func (r *realRecord) shares(t *testing.T, hop string, keep func(i int) bool) (server, both float64, n int) {
	var ss, bs []float64
	for i, run := range r.Runs {
		if !keep(i) {
			continue
		}
		for _, h := range run.Hops {
			closed := h.Client + h.Server - h.Both
			if h.Name != hop || closed < 100 {
				continue
			}
			ss = append(ss, float64(h.Server-h.Both)/float64(closed))
			bs = append(bs, float64(h.Both)/float64(closed))
		}
	}
	if len(ss) == 0 {
		t.Fatalf("no run for hop %s", hop)
	}
	return testutil.Median(ss), testutil.Median(bs), len(ss)
}

// TestSoftwareMatchesRecord holds the presets' close-race shares to the
// recorded runs of the real stack: the medians over the runs, within
// 0.1 (they move with how busy the machine is; the record has the
// spread).
func TestSoftwareMatchesRecord(t *testing.T) {
	r := readRealRecord(t)
	preset := func(name, key string) float64 {
		for _, st := range Software[name].Settings {
			if st.Key == key {
				return st.Value.(float64)
			}
		}
		t.Fatalf("preset %s has no %s", name, key)
		return 0
	}
	check := func(name, hop string, keep func(i int) bool) {
		server, both, n := r.shares(t, hop, keep)
		t.Logf("%s: accepting side %.3f, both %.3f (median of %d runs)", name, server, both, n)
		if p := preset(name, "server_closes_first"); math.Abs(p-server) > 0.1 {
			t.Errorf("%s: server_closes_first %.3f, recorded %.3f", name, p, server)
		}
		if p := preset(name, "simultaneous_close"); math.Abs(p-both) > 0.1 {
			t.Errorf("%s: simultaneous_close %.3f, recorded %.3f", name, p, both)
		}
	}
	// nginx → the app over HTTP/1.0 with Connection: close.
	for _, app := range []string{"gunicorn", "flask"} {
		check(app, "app", func(i int) bool {
			return r.Runs[i].AppServer == app && (r.Runs[i].Keepalive == 0 || app == "flask")
		})
	}
	// siege (Connection: close) → nginx.
	check("nginx", "nginx", func(i int) bool { return !r.Runs[i].Load.KeepAlive })
	// redis.Redis() per request → redis-server: the app always closes.
	check("redis", "redis", func(i int) bool { return r.Runs[i].Redis == "new" })
}

// TestRecordFlaskCannotKeep: the recorded runs show what the flask preset
// says: with nginx's keepalive, every request still opens a connection to
// Flask's development server, while gunicorn's are kept.
func TestRecordFlaskCannotKeep(t *testing.T) {
	r := readRealRecord(t)
	seen := map[string]bool{}
	for _, run := range r.Runs {
		if run.Keepalive == 0 || run.Requests < 100 {
			continue
		}
		for _, h := range run.Hops {
			if h.Name != "app" {
				continue
			}
			perReq := float64(h.Connects) / float64(run.Requests)
			switch run.AppServer {
			case "flask":
				seen["flask"] = true
				if perReq < 0.95 {
					t.Errorf("%s: %.2f connections per request to Flask's server with keepalive", run.Name, perReq)
				}
			case "gunicorn":
				seen["gunicorn"] = true
				if perReq > 0.05 && run.Load.KeepAlive && run.Keepalive >= 32 {
					t.Errorf("%s: %.2f connections per request to gunicorn with keepalive", run.Name, perReq)
				}
			}
		}
	}
	if !seen["flask"] || !seen["gunicorn"] {
		t.Errorf("the record lacks keepalive runs of both servers: %v", seen)
	}
	if Software["flask"].Settings[1] != (TierSetting{"keepalive_requests", 1}) {
		t.Errorf("the flask preset keeps connections: %+v", Software["flask"].Settings)
	}
}

// TestSoftwarePreset: software = NAME sets the program's keys on a tier,
// keys set after it win, and an unknown name is refused with the list.
func TestSoftwarePreset(t *testing.T) {
	s := stackScenario(t)
	set(t, &s, "tier.app.software", "flask")
	if v, _ := s.Get("tier.app.keepalive_requests"); v != "1" {
		t.Errorf("flask: keepalive_requests %s", v)
	}
	if v, _ := s.Get("tier.app.software"); v != "flask" {
		t.Errorf("software %q", v)
	}
	set(t, &s, "tier.app.software", "gunicorn", "tier.app.keepalive_timeout", "5s")
	if ts := s.TierScenario(1); ts.KeepaliveRequests != 0 || ts.KeepaliveTimeout != 5*time.Second || ts.ServerClosesFirst != gunicornClosesFirst {
		t.Errorf("gunicorn then keepalive_timeout 5s: %v, %v, %v", ts.KeepaliveRequests, ts.KeepaliveTimeout, ts.ServerClosesFirst)
	}
	err := s.Set("tier.app.software", "uwsgi")
	if err == nil || !strings.Contains(err.Error(), "flask, gunicorn, nginx, redis") {
		t.Errorf("unknown software: %v", err)
	}
	// Every preset's keys are valid tier keys.
	for name := range Software {
		s := stackScenario(t)
		if err := s.Set("tier.redis.software", name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		for _, st := range Software[name].Settings {
			if err := s.Set("tier.redis."+st.Key, st.Value); err != nil {
				t.Errorf("%s: %s: %v", name, st.Key, err)
			}
		}
	}
	// Flask's server in the chain: nginx's keepalive keeps nothing.
	s = stackScenario(t)
	set(t, &s, "tier.nginx.reuse", "upstream-keepalive", "tier.app.software", "flask")
	if sum := runChainT(t, s, nil); sum.Hop["app"].Reused != 0 || sum.Hop["app"].Connects != sum.Requests {
		t.Errorf("flask behind keepalive: %+v", sum.Hop["app"])
	}
}
