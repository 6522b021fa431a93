package stack

import (
	"math"
	"strings"
	"testing"
)

// window makes a calibration window of a stack whose tiers cost exactly
// the given CPU per request, for the connection rates given.
func window(name string, nginxAcc, appAcc, redisAcc float64) *Result {
	const n = 1000
	// nginx 0.06 + 0.03/accepted + 0.04/opened; app 0.7 + 0.1/accepted +
	// 0.2/opened; redis 2 × 0.02 + 0.05/accepted; load 0.1.
	r := &Result{Name: name, Requests: n, BackgroundCPU: 0.5, CPUPerRequestMS: map[string]float64{
		"load":  0.1,
		"nginx": 0.06 + 0.03*nginxAcc + 0.04*appAcc,
		"app":   0.7 + 0.1*appAcc + 0.2*redisAcc,
		"redis": 2*0.02 + 0.05*redisAcc,
	}}
	for _, h := range []struct {
		name string
		per  float64
	}{{"nginx", nginxAcc}, {"app", appAcc}, {"redis", redisAcc}} {
		r.Hops = append(r.Hops, HopResult{Hop: Hop{Name: h.name}, Connects: int64(math.Round(h.per * n))})
	}
	return r
}

// TestCalibrate: the four variants separate each tier's work per request,
// per connection accepted and per connection opened; the users' kept
// connections (none accepted by nginx) leave nginx's accept cost at 0.
func TestCalibrate(t *testing.T) {
	ws := []*Result{window("off-new", 0, 1, 1), window("off-pool", 0, 1, 0), window("on-new", 0, 0, 1), window("on-pool", 0, 0, 0)}
	c, err := Calibrate(ws)
	if err != nil {
		t.Fatal(err)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-3 {
			t.Errorf("%s = %.4f, want %.4f", what, got, want)
		}
	}
	near("load", c.LoadCPU, 0.1)
	near("nginx server_time", c.Tiers["nginx"].ServerTime, 0.06)
	near("nginx server_conn_time", c.Tiers["nginx"].ServerConnTime, 0)
	near("nginx client_conn_time", c.Tiers["nginx"].ClientConnTime, 0.04)
	near("app server_time", c.Tiers["app"].ServerTime, 0.7)
	near("app server_conn_time", c.Tiers["app"].ServerConnTime, 0.1)
	near("app client_conn_time", c.Tiers["app"].ClientConnTime, 0.2)
	near("redis server_time", c.Tiers["redis"].ServerTime, 0.02)
	near("redis server_conn_time", c.Tiers["redis"].ServerConnTime, 0.05)
	near("background", c.Background, 0.5)
	if c.Tiers["app"].Residual > 1e-6 || len(c.Notes) != 0 {
		t.Errorf("residual %.4f, notes %v", c.Tiers["app"].Residual, c.Notes)
	}
}

// TestCalibrateNotSeparable: Flask's server accepts a connection for every
// request whatever nginx does, so its accept cost cannot be told apart
// from its work per request: it stays in server_time, and a note says so.
func TestCalibrateNotSeparable(t *testing.T) {
	ws := []*Result{window("off-new", 0, 1, 1), window("off-pool", 0, 1, 0), window("on-new", 0, 1, 1), window("on-pool", 0, 1, 0)}
	c, err := Calibrate(ws)
	if err != nil {
		t.Fatal(err)
	}
	app := c.Tiers["app"]
	if math.Abs(app.ServerTime-0.8) > 1e-3 || app.ServerConnTime != 0 || math.Abs(app.ClientConnTime-0.2) > 1e-3 {
		t.Errorf("app %+v", app)
	}
	if !strings.Contains(strings.Join(c.Notes, "\n"), "app: server_conn_time not separable") {
		t.Errorf("notes %v", c.Notes)
	}
}

// TestCalibrateErrors: no window, or a window that answered nothing.
func TestCalibrateErrors(t *testing.T) {
	if _, err := Calibrate(nil); err == nil {
		t.Error("no window calibrated")
	}
	w := window("x", 0, 0, 0)
	w.Requests = 0
	if _, err := Calibrate([]*Result{w}); err == nil || !strings.Contains(err.Error(), "answered no request") {
		t.Errorf("empty window: %v", err)
	}
}
