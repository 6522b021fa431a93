package stack

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A Result is one measured run: what the load saw, and per hop and per
// tier what the kernel and the programs counted.
type Result struct {
	Name          string             `json:"name"`
	AppServer     string             `json:"app_server"`
	Redis         string             `json:"redis"`
	Keepalive     int                `json:"upstream_keepalive"`
	NginxWorkers  int                `json:"nginx_workers"`
	AppWorkers    int                `json:"app_workers,omitempty"`
	AppThreads    int                `json:"app_threads,omitempty"`
	AppKeepaliveS int                `json:"app_keepalive_s,omitempty"`
	Load          Load               `json:"load"`
	Sysctl        map[string]string  `json:"sysctl"` // in the run's namespace
	DurationS     float64            `json:"duration_s"`
	Requests      int                `json:"requests"`
	Errors        int                `json:"errors"`
	ThroughputRPS float64            `json:"throughput_rps"`
	LatencyMS     map[string]float64 `json:"latency_ms,omitempty"`
	Siege         map[string]float64 `json:"siege,omitempty"`
	Hops          []HopResult        `json:"hops"`
	// CPUMS is each tier's CPU time in the window (user + system, all its
	// processes and threads); CPUPerRequestMS divides it by the requests;
	// Utilisation by the window (1 = one core busy all the time).
	CPUMS           map[string]float64 `json:"cpu_ms"`
	CPUPerRequestMS map[string]float64 `json:"cpu_per_request_ms"`
	Utilisation     map[string]float64 `json:"utilisation"`
	// RunDelayPerRequestMS: what each tier's threads waited for a CPU
	// (runnable, not running) per request: the machine's other programs
	// at work. A lower bound for Flask's server, whose request threads end
	// before it is read.
	RunDelayPerRequestMS map[string]float64 `json:"run_delay_per_request_ms"`
	// TCPExt: the namespace's TcpExt counters over the window (see
	// tcpExtKeys): TW counts every socket that entered TIME_WAIT.
	TCPExt map[string]int64 `json:"tcp_ext"`
	// NginxErrors counts lines of nginx's error log by what they say.
	NginxErrors map[string]int `json:"nginx_errors,omitempty"`
	LoadAvg     string         `json:"loadavg_before"`
	// CPUPressure: /proc/pressure/cpu "some avg10" (%) at the start and
	// at the end of the window: how often something waited for a CPU.
	CPUPressure [2]float64 `json:"cpu_pressure"`
}

// A HopResult is one hop in the measured window. "Client" is the side that
// connects (siege or the Go load, nginx, the app), "server" the side that
// accepts (nginx, the app, redis-server).
type HopResult struct {
	Hop
	// Connects: connections opened in the window (nginx's stub_status for
	// the hop into nginx, redis-server's total_connections_received for
	// the hop into redis, the namespace's ActiveOpens minus both for the
	// hop into the app).
	Connects int64 `json:"connects"`
	// TimeWaitClient and TimeWaitServer: sockets that entered TIME_WAIT
	// on each side during the window (none expires within 60 s);
	// TimeWaitBoth: connections with a TIME_WAIT socket on both sides, a
	// simultaneous close.
	TimeWaitClient int `json:"time_wait_client"`
	TimeWaitServer int `json:"time_wait_server"`
	TimeWaitBoth   int `json:"time_wait_both"`
	// OpenEnd: established connections when the load stopped; OpenPeak:
	// the most seen at one sample (every 100 ms).
	OpenEnd  int `json:"open_end"`
	OpenPeak int `json:"open_peak"`
	// ClosingPeak: the most sockets seen half way through a close, by
	// side and state (fin_wait1, fin_wait2, close_wait, last_ack, closing).
	ClosingPeak map[string]int `json:"closing_peak,omitempty"`
	// After the load, once the app server's keep-alive timer has run:
	// TIME_WAIT sockets that appeared after the window, by side.
	IdleCloseClient int `json:"idle_close_time_wait_client"`
	IdleCloseServer int `json:"idle_close_time_wait_server"`
}

// Tiers whose CPU time a run reports.
var Tiers = []string{"load", "nginx", "app", "redis"}

// Measure warms the stack up with the load for l.Warmup, then measures
// it for l.Duration.
func Measure(ctx context.Context, st *Stack, l Load) (*Result, error) {
	url := "http://" + addr(st.NginxPort)
	hops := st.Hops()
	res := &Result{AppServer: st.AppServer, Redis: st.Redis, Keepalive: st.Keepalive,
		NginxWorkers: st.NginxWorkers, Load: l}
	if st.AppServer == Gunicorn {
		res.AppWorkers, res.AppThreads, res.AppKeepaliveS = st.GunicornWorkers, st.GunicornThreads, st.GunicornKeepalive
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		res.LoadAvg = strings.TrimSpace(string(b))
	}

	// Counters at the start of the window; the probes' own connections
	// come first.
	var (
		acc0, act0 int64
		ri0        map[string]string
		base       []hopSockets
		cpu0       map[string]int64
		delay0     map[string]map[int]int64
		ext0       map[string]int64
	)
	pids := st.Pids()
	begin := func() (err error) {
		// The three connection counters back to back, then the sockets:
		// the load runs meanwhile, so what lies between them is skew.
		if acc0, err = nginxAccepts(st.NginxPort); err != nil {
			return err
		}
		if ri0, err = redisInfo(st.RedisPort, "total_connections_received"); err != nil {
			return err
		}
		if act0, _, err = tcpOpens(); err != nil {
			return err
		}
		if ext0, err = tcpExt(); err != nil {
			return err
		}
		if base, err = readHops(hops, allStates, true); err != nil {
			return err
		}
		if cpu0, err = st.tierTicks(pids); err != nil {
			return err
		}
		res.CPUPressure[0] = cpuPressure()
		delay0, err = st.tierDelays(pids)
		return err
	}
	// Sample the open and closing sockets every 100 ms during the window.
	var smu sync.Mutex
	openPeak := make([]int, len(hops))
	closingPeak := make([]map[string]int, len(hops))
	for i := range closingPeak {
		closingPeak[i] = map[string]int{}
	}
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var swg sync.WaitGroup
	defer func() { stopSampling(); swg.Wait() }()
	swg.Add(1)
	go func() {
		defer swg.Done()
		const notTW = allStates &^ (1 << stTimeWait)
		select {
		case <-sampleCtx.Done():
			return
		case <-time.After(l.Warmup):
		}
		for {
			select {
			case <-sampleCtx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			hs, err := readHops(hops, notTW, false)
			if err != nil {
				continue
			}
			smu.Lock()
			for i, h := range hs {
				openPeak[i] = max(openPeak[i], h.client[stEstablished])
				for _, st := range []int{stFinWait1, stFinWait2, stCloseWait, stLastAck, stClosing} {
					for side, ss := range map[string]*sideStates{"client": &h.client, "server": &h.server} {
						k := side + "_" + stateNames[st]
						closingPeak[i][k] = max(closingPeak[i][k], ss[st])
					}
				}
			}
			smu.Unlock()
		}
	}()

	var lr *loadResult
	var from, to time.Time
	var err error
	switch l.Kind {
	case LoadSiege:
		if l.Warmup > 0 {
			wctx, cancel := context.WithTimeout(ctx, l.Warmup)
			var w *loadResult
			w, err = goLoad(wctx, url, Load{Concurrency: l.Concurrency, KeepAlive: l.KeepAlive}, time.Now(), time.Now(), nil)
			cancel()
			if w != nil {
				w.closeIdle()
			}
			if err != nil {
				return nil, fmt.Errorf("stack: warm-up: %w", err)
			}
		}
		if err := begin(); err != nil {
			return nil, err
		}
		from = time.Now()
		lr, err = siegeLoad(ctx, st.Dir, url, l)
		to = time.Now()
	default:
		// One closed loop for the warm-up and the window, so the users
		// keep their connections across the start of the window.
		from = time.Now().Add(l.Warmup)
		to = from.Add(l.Duration)
		lctx, cancel := context.WithDeadline(ctx, to)
		lr, err = goLoad(lctx, url, l, from, to, begin)
		cancel()
	}
	// CPU at the end of the window, before anything else runs.
	cpu1, cerr := st.tierTicks(pids)
	delay1, derr := st.tierDelays(pids)
	res.CPUPressure[1] = cpuPressure()
	if cerr == nil {
		cerr = derr
	}
	stopSampling()
	swg.Wait()
	if err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, cerr
	}
	window := to.Sub(from)

	// Let the closes in flight finish, then read the counters.
	time.Sleep(300 * time.Millisecond)
	act1, _, err := tcpOpens()
	if err != nil {
		return nil, err
	}
	ext1, err := tcpExt()
	if err != nil {
		return nil, err
	}
	res.TCPExt = map[string]int64{}
	for k, v := range ext1 {
		res.TCPExt[k] = v - ext0[k]
	}
	end, err := readHops(hops, allStates, true)
	if err != nil {
		return nil, err
	}
	acc1, err := nginxAccepts(st.NginxPort)
	if err != nil {
		return nil, err
	}
	ri1, err := redisInfo(st.RedisPort, "total_connections_received")
	if err != nil {
		return nil, err
	}
	// Later still: the app server's keep-alive timer (gunicorn: 2 s,
	// checked every second) closes the connections nginx left idle.
	time.Sleep(time.Duration(max(st.GunicornKeepalive, 1)+2) * time.Second)
	late, err := readHops(hops, allStates, true)
	if lr.closeIdle != nil {
		lr.closeIdle()
	}
	if err != nil {
		return nil, err
	}

	r0, _ := strconv.ParseInt(ri0["total_connections_received"], 10, 64)
	r1, _ := strconv.ParseInt(ri1["total_connections_received"], 10, 64)
	// Each probe counts itself: the ones before the window are in the
	// first reading, the ones after it in the second only.
	clientNginx := acc1 - acc0 - 1
	appRedis := r1 - r0 - 1
	nginxApp := (act1 - act0) - clientNginx - appRedis
	connects := []int64{clientNginx, nginxApp, appRedis}

	res.DurationS = round(window.Seconds(), 3)
	res.Requests, res.Errors = lr.requests, lr.errors
	res.ThroughputRPS = round(float64(lr.requests-lr.errors)/window.Seconds(), 1)
	if l.Kind == LoadSiege {
		res.Siege = lr.siege
		res.ThroughputRPS = round(lr.siege["transaction_rate"], 1)
		res.DurationS = round(lr.siege["elapsed_time"], 3)
	} else {
		res.LatencyMS = latencyStats(lr.latencies)
	}
	for i, h := range hops {
		hr := HopResult{Hop: h, Connects: connects[i], OpenEnd: end[i].client[stEstablished], OpenPeak: max(openPeak[i], end[i].client[stEstablished])}
		for p := range end[i].clientTW {
			if !base[i].clientTW[p] {
				hr.TimeWaitClient++
				if end[i].serverTW[p] && !base[i].serverTW[p] {
					hr.TimeWaitBoth++
				}
			}
		}
		for p := range end[i].serverTW {
			if !base[i].serverTW[p] {
				hr.TimeWaitServer++
			}
		}
		for p := range late[i].clientTW {
			if !end[i].clientTW[p] && !base[i].clientTW[p] {
				hr.IdleCloseClient++
			}
		}
		for p := range late[i].serverTW {
			if !end[i].serverTW[p] && !base[i].serverTW[p] {
				hr.IdleCloseServer++
			}
		}
		hr.ClosingPeak = map[string]int{}
		for k, v := range closingPeak[i] {
			if v > 0 {
				hr.ClosingPeak[k] = v
			}
		}
		res.Hops = append(res.Hops, hr)
	}
	res.CPUMS, res.CPUPerRequestMS, res.Utilisation = map[string]float64{}, map[string]float64{}, map[string]float64{}
	res.RunDelayPerRequestMS = map[string]float64{}
	ok := lr.requests - lr.errors
	for _, t := range Tiers {
		ticks := cpu1[t] - cpu0[t]
		if t == "load" && lr.pid != 0 {
			ticks = lr.cpuTicks
		}
		ms := float64(ticks) * 10
		res.CPUMS[t] = ms
		if ok > 0 {
			res.CPUPerRequestMS[t] = round(ms/float64(ok), 4)
			if t != "load" || lr.pid == 0 {
				res.RunDelayPerRequestMS[t] = round(delaySince(delay0[t], delay1[t]).Seconds()*1000/float64(ok), 4)
			}
		}
		res.Utilisation[t] = round(ms/float64(window.Milliseconds()), 3)
	}
	res.NginxErrors = nginxErrors(filepath.Join(st.Dir, "error.log"))
	return res, nil
}

// tierDelays reads each tier's threads' run delays ("load": this process).
func (st *Stack) tierDelays(pids map[string]int) (map[string]map[int]int64, error) {
	out := map[string]map[int]int64{}
	for tier, pid := range st.tierPids(pids) {
		d, err := runDelays(pid)
		if err != nil {
			return nil, fmt.Errorf("stack: run delays of %s: %w", tier, err)
		}
		out[tier] = d
	}
	self, err := runDelays(os.Getpid())
	if err != nil {
		return nil, err
	}
	// This process's own threads only: its children are the tiers.
	own := map[int]int64{}
	if tasks, err := os.ReadDir("/proc/self/task"); err == nil {
		for _, t := range tasks {
			if tid, err := strconv.Atoi(t.Name()); err == nil {
				own[tid] = self[tid]
			}
		}
	}
	out["load"] = own
	return out, nil
}

// tierPids maps each server tier to the first process of its program.
func (st *Stack) tierPids(pids map[string]int) map[string]int {
	app := pids[Gunicorn]
	if st.AppServer == Flask {
		app = pids[Flask]
	}
	return map[string]int{"nginx": pids["nginx"], "app": app, "redis": pids["redis-server"]}
}

// tierTicks reads the CPU time of each tier's processes; "load" is this
// process (the Go load generator and the sampler).
func (st *Stack) tierTicks(pids map[string]int) (map[string]int64, error) {
	out := map[string]int64{}
	for tier, pid := range st.tierPids(pids) {
		t, err := cpuTicks(pid)
		if err != nil {
			return nil, fmt.Errorf("stack: CPU time of %s: %w", tier, err)
		}
		out[tier] = t
	}
	f, ok := statFields(os.Getpid())
	if !ok {
		return nil, fmt.Errorf("stack: cannot read this process's CPU time")
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	out["load"] = u + s
	return out, nil
}

// nginxErrors counts the error log's lines by the errors this stack can
// meet: no local port left, a reset or a close by the app on a kept
// connection.
func nginxErrors(path string) map[string]int {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case strings.Contains(line, "(99: "):
			out["eaddrnotavail"]++
		case strings.Contains(line, "(104: "):
			out["reset_by_app"]++
		case strings.Contains(line, "prematurely closed"):
			out["closed_by_app"]++
		case strings.Contains(line, "[error]") || strings.Contains(line, "[crit]"):
			out["other"]++
		}
	}
	return out
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}
