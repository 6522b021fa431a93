package stack

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// A snapshot is every counter of a run at one moment: the connections
// each hop's accepting tier (or the kernel) counted, the sockets of each
// hop by state, and the CPU time and run delays of each tier and of the
// machine.
type snapshot struct {
	accepts, redisConns, activeOpens int64
	ext                              map[string]int64
	socks                            []hopSockets
	cpu                              map[string]int64
	mach, steal                      int64
	delay                            map[string]map[int]schedStat
	pressure                         float64
	harness                          time.Duration // harnessCPU so far
}

// readCPU fills the snapshot's CPU part: read right at a window's edge.
func (st *Stack) readCPU(sn *snapshot, pids map[string]int, own *harnessCPU) (err error) {
	if sn.cpu, err = st.tierTicks(pids); err != nil {
		return err
	}
	if sn.mach, sn.steal, err = machineTicks(); err != nil {
		return err
	}
	sn.pressure = cpuPressure()
	sn.delay, err = st.tierDelays(pids, own)
	return err
}

// readCounts fills the snapshot's connection counters and sockets. The
// three counters are read back to back, then the sockets: the load runs
// meanwhile, so what lies between them is skew. Each probe counts itself
// (see window).
func (st *Stack) readCounts(sn *snapshot) (err error) {
	if sn.accepts, err = nginxAccepts(st.NginxPort); err != nil {
		return err
	}
	ri, err := redisInfo(st.RedisPort, "total_connections_received")
	if err != nil {
		return err
	}
	sn.redisConns, _ = strconv.ParseInt(ri["total_connections_received"], 10, 64)
	if sn.activeOpens, _, err = tcpOpens(); err != nil {
		return err
	}
	if sn.ext, err = tcpExt(); err != nil {
		return err
	}
	sn.socks, err = readHops(st.Hops(), allStates, true)
	return err
}

// sampler records, every 100 ms, the most open and closing sockets of
// each hop in the current window, and how the load's connections are
// spread over nginx's workers.
type sampler struct {
	mu      sync.Mutex
	win     int // -1: before the first window
	open    [][]int
	closing [][]map[string]int
	st      *Stack
	split   []int // the load's connections per nginx worker, at the last sample
}

func newSampler(windows, hops int) *sampler {
	s := &sampler{win: -1, open: make([][]int, windows), closing: make([][]map[string]int, windows)}
	for w := range windows {
		s.open[w] = make([]int, hops)
		s.closing[w] = make([]map[string]int, hops)
		for h := range hops {
			s.closing[w][h] = map[string]int{}
		}
	}
	return s
}

func (s *sampler) setWindow(w int) { s.mu.Lock(); s.win = w; s.mu.Unlock() }

func (s *sampler) run(ctx context.Context, hops []Hop, own *harnessCPU) {
	const notTW = allStates &^ (1 << stTimeWait)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own.own()
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		t0 := threadCPU()
		hs, err := readHops(hops, notTW, false)
		split := s.st.nginxSplit()
		own.add(threadCPU() - t0)
		if err != nil {
			continue
		}
		s.mu.Lock()
		if split != nil && s.win >= 0 {
			s.split = split
		}
		if w := s.win; w >= 0 && w < len(s.open) {
			for i, h := range hs {
				s.open[w][i] = max(s.open[w][i], h.client[stEstablished])
				for _, state := range []int{stFinWait1, stFinWait2, stCloseWait, stLastAck, stClosing} {
					for side, ss := range map[string]*sideStates{"client": &h.client, "server": &h.server} {
						k := side + "_" + stateNames[state]
						s.closing[w][i][k] = max(s.closing[w][i][k], ss[state])
					}
				}
			}
		}
		s.mu.Unlock()
	}
}

// harnessCPU adds up the CPU time the measurement itself spends in the
// load's process (the samplers, the probe, the readings at the slices'
// edges), which is not the load's work: it counts as the machine's other
// work.
type harnessCPU struct {
	ns   atomic.Int64
	mu   sync.Mutex
	tids map[int]bool // the measurement's own threads (sampler, probe)
}

func (h *harnessCPU) add(d time.Duration) { h.ns.Add(int64(d)) }

// own marks the calling thread as the measurement's: its run delay is not
// the load's.
func (h *harnessCPU) own() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tids == nil {
		h.tids = map[int]bool{}
	}
	h.tids[syscall.Gettid()] = true
}

func (h *harnessCPU) isOwn(tid int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.tids[tid]
}

// Measure warms the stack up with the load for l.Warmup, then measures it
// for l.Duration. With l.Calibrate, a calibration window that long is
// measured too (res.Calibration): interleaved with the measured one in
// slices of l.Slice (one calibration slice, then two measured ones, and so
// on), or before it when l.Slice is 0, with one load running throughout
// (the users keep their connections across the slices' edges). Slices put
// both windows in the same conditions: on a machine shared with other
// programs, how fast the CPU runs for the stack drifts over seconds.
func Measure(ctx context.Context, st *Stack, l Load) (*Result, error) {
	url := "http://" + addr(st.NginxPort)
	hops := st.Hops()
	pids := st.Pids()
	loadavg := ""
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		loadavg = strings.TrimSpace(string(b))
	}
	if l.Calibrate > 0 && l.Kind == LoadSiege {
		return nil, fmt.Errorf("stack: a calibration window needs the Go load (siege runs one window)")
	}
	durs, labels := sliceLayout(l)
	nl := 1 // labels: 0 the measured window, 1 the calibration window
	if l.Calibrate > 0 {
		nl = 2
	}
	n := len(durs)
	snaps := make([]*snapshot, n+1)
	for i := range snaps {
		snaps[i] = &snapshot{}
	}
	smp := newSampler(nl, len(hops))
	smp.st = st
	probe := newSpeedProbe(nl)
	stalls := newStallProbe(nl)
	sampleCtx, stopSampling := context.WithCancel(ctx)
	var swg sync.WaitGroup
	defer func() { stopSampling(); swg.Wait() }()
	swg.Add(3)
	own := &harnessCPU{}
	go func() { defer swg.Done(); smp.run(sampleCtx, hops, own) }()
	go func() { defer swg.Done(); probe.run(sampleCtx, own) }()
	go func() { defer swg.Done(); stalls.run(sampleCtx) }()

	// At the start of slice i: its counters, then its CPU.
	mark := func(i int) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		t0 := threadCPU()
		defer func() { own.add(threadCPU() - t0) }()
		if err := st.readCounts(snaps[i]); err != nil {
			return err
		}
		snaps[i].harness = time.Duration(own.ns.Load())
		if err := st.readCPU(snaps[i], pids, own); err != nil {
			return err
		}
		smp.setWindow(labels[i])
		probe.setWindow(labels[i])
		stalls.setWindow(labels[i])
		return nil
	}
	var lr *loadResult
	var marks []time.Time
	var err error
	switch l.Kind {
	case LoadSiege:
		if l.Warmup > 0 {
			wctx, cancel := context.WithTimeout(ctx, l.Warmup)
			var w *loadResult
			now := time.Now()
			w, err = goLoad(wctx, url, Load{Concurrency: l.Concurrency, KeepAlive: l.KeepAlive}, []time.Time{now, now}, nil)
			cancel()
			if w != nil {
				w.closeIdle()
			}
			if err != nil {
				return nil, fmt.Errorf("stack: warm-up: %w", err)
			}
		}
		if err := mark(0); err != nil {
			return nil, err
		}
		from := time.Now()
		lr, err = siegeLoad(ctx, st.Dir, url, l)
		marks = []time.Time{from, time.Now()}
	default:
		// One closed loop for the warm-up and the slices.
		marks = []time.Time{time.Now().Add(l.Warmup)}
		for _, d := range durs {
			marks = append(marks, marks[len(marks)-1].Add(d))
		}
		lctx, cancel := context.WithDeadline(ctx, marks[n])
		lr, err = goLoad(lctx, url, l, marks, mark)
		cancel()
	}
	smp.setWindow(-1)
	probe.setWindow(-1)
	stalls.setWindow(-1)
	// CPU at the end of the last slice, before anything else runs.
	snaps[n].harness = time.Duration(own.ns.Load())
	cerr := st.readCPU(snaps[n], pids, own)
	stopSampling()
	swg.Wait()
	if err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, cerr
	}
	// Let the closes in flight finish, then read the counters.
	time.Sleep(300 * time.Millisecond)
	if err := st.readCounts(snaps[n]); err != nil {
		return nil, err
	}
	// Later still: the app server's keep-alive timer (gunicorn: 2 s,
	// checked every second) closes the connections nginx kept idle.
	late := snaps[n].socks
	if st.AppServer == Gunicorn && st.Keepalive > 0 {
		time.Sleep(time.Duration(max(st.GunicornKeepalive, 1)+2) * time.Second)
		late, err = readHops(hops, allStates, true)
	}
	if lr.closeIdle != nil {
		lr.closeIdle()
	}
	if err != nil {
		return nil, err
	}
	accs := make([]*windowAcc, nl)
	masters := st.tierPids(pids)
	for i := range accs {
		accs[i] = newWindowAcc(len(hops))
		accs[i].masters = masters
	}
	for i := range n {
		var lateSocks []hopSockets
		if i == n-1 {
			lateSocks = late
		}
		accs[labels[i]].add(snaps[i], snaps[i+1], lateSocks, &lr.windows[i], lr, durs[i], i == n-1)
	}
	results := make([]*Result, nl)
	for w := range nl {
		res := &Result{AppServer: st.AppServer, Redis: st.Redis, Keepalive: st.Keepalive,
			NginxWorkers: st.NginxWorkers, Load: l, LoadAvg: loadavg}
		if st.AppServer == Gunicorn {
			res.AppWorkers, res.AppThreads, res.AppKeepaliveS = st.GunicornWorkers, st.GunicornThreads, st.GunicornKeepalive
		}
		accs[w].result(res, hops, smp.open[w], smp.closing[w])
		if l.Kind == LoadSiege {
			res.Siege = lr.siege
			res.ThroughputRPS = round(lr.siege["transaction_rate"], 1)
			res.DurationS = round(lr.siege["elapsed_time"], 3)
			res.LatencyMS = nil
		}
		res.ProbeUS = probe.median(w)
		res.LoadStallsPerS, res.LoadStallMS = stalls.summary(w, accs[w].length)
		results[w] = res
	}
	res := results[0]
	if nl > 1 {
		res.Calibration = results[1]
	}
	res.NginxErrors = nginxErrors(filepath.Join(st.Dir, "error.log"))
	smp.mu.Lock()
	res.NginxWorkerConns = smp.split
	smp.mu.Unlock()
	return res, nil
}

// nginxSplit counts the load's established connections held by each nginx
// worker (the kernel hands a new connection to whichever worker accepts it
// first), largest first; nil when it cannot be read.
func (st *Stack) nginxSplit() []int {
	master := st.Pids()["nginx"]
	byInode := map[uint64]int{}
	var workers []int
	_ = walkTree(master, func(p int, _ []string) {
		if p == master {
			return
		}
		workers = append(workers, p)
		dir := filepath.Join("/proc", strconv.Itoa(p), "fd")
		ents, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range ents {
			l, err := os.Readlink(filepath.Join(dir, e.Name()))
			if err != nil || !strings.HasPrefix(l, "socket:[") {
				continue
			}
			if ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]"), 10, 64); err == nil {
				byInode[ino] = p
			}
		}
	})
	if len(workers) == 0 {
		return nil
	}
	count := map[int]int{}
	err := dumpSockets(1<<stEstablished, func(s diagSock) {
		if s.lport == uint16(st.NginxPort) {
			if p, ok := byInode[uint64(s.inode)]; ok {
				count[p]++
			}
		}
	})
	if err != nil {
		return nil
	}
	out := make([]int, 0, len(workers))
	for _, p := range workers {
		out = append(out, count[p])
	}
	slices.SortFunc(out, func(a, b int) int { return b - a })
	return out
}

// windowAcc adds up the slices of one window.
type windowAcc struct {
	requests, errors int
	latencies        []time.Duration
	length           time.Duration
	connects         []int64
	tw               [][3]int // client, server, both
	idleClose        [][2]int
	openEnd          []int
	cpuTicks         map[string]int64
	delay            map[string]time.Duration
	runs             map[string]int64
	mach, steal      int64
	harness          time.Duration
	ext              map[string]int64
	pressure         [2]float64
	slices           int
	// workerRun: each worker process's time on a CPU, by tier (nginx,
	// app); masters: the tiers' first processes, left out (they accept
	// no connection).
	workerRun map[string]map[int]int64
	masters   map[string]int
}

func newWindowAcc(hops int) *windowAcc {
	return &windowAcc{connects: make([]int64, hops), tw: make([][3]int, hops), idleClose: make([][2]int, hops),
		openEnd: make([]int, hops), cpuTicks: map[string]int64{}, delay: map[string]time.Duration{}, runs: map[string]int64{}, ext: map[string]int64{},
		workerRun: map[string]map[int]int64{"nginx": {}, "app": {}}}
}

// add counts what happened between snapshots a and b: the load's requests
// lw in a slice of the given length, the connections opened and the
// TIME_WAIT sockets that appeared on each hop, and CPU; late, if not nil,
// is a reading after the app server's idle timer has run.
func (acc *windowAcc) add(a, b *snapshot, late []hopSockets, lw *loadWindow, lr *loadResult, length time.Duration, last bool) {
	if acc.slices == 0 {
		acc.pressure[0] = a.pressure
	}
	acc.slices++
	acc.pressure[1] = b.pressure
	acc.length += length
	acc.requests += lw.requests
	acc.errors += lw.errors
	acc.latencies = append(acc.latencies, lw.latencies...)
	// Each probe counts itself: the ones before the slice are in the
	// first reading, the ones after it in the second only; the kernel's
	// ActiveOpens counts both of the second reading's probes.
	clientNginx := b.accepts - a.accepts - 1
	appRedis := b.redisConns - a.redisConns - 1
	nginxApp := (b.activeOpens - a.activeOpens) - clientNginx - appRedis - 2
	for i, c := range []int64{clientNginx, nginxApp, appRedis} {
		if i < len(acc.connects) {
			acc.connects[i] += c
		}
	}
	for k, v := range b.ext {
		acc.ext[k] += v - a.ext[k]
	}
	for i := range acc.tw {
		end, base := b.socks[i], a.socks[i]
		for p := range end.clientTW {
			if !base.clientTW[p] {
				acc.tw[i][0]++
				if end.serverTW[p] && !base.serverTW[p] {
					acc.tw[i][2]++
				}
			}
		}
		for p := range end.serverTW {
			if !base.serverTW[p] {
				acc.tw[i][1]++
			}
		}
		if late != nil {
			for p := range late[i].clientTW {
				if !end.clientTW[p] && !base.clientTW[p] {
					acc.idleClose[i][0]++
				}
			}
			for p := range late[i].serverTW {
				if !end.serverTW[p] && !base.serverTW[p] {
					acc.idleClose[i][1]++
				}
			}
		}
		if last {
			acc.openEnd[i] = end.client[stEstablished]
		}
	}
	for _, t := range Tiers {
		ticks := b.cpu[t] - a.cpu[t]
		if t == "load" && lr.pid != 0 {
			ticks = lr.cpuTicks
		}
		acc.cpuTicks[t] += ticks
		if t != "load" || lr.pid == 0 {
			d, n := delaySince(a.delay[t], b.delay[t])
			acc.delay[t] += d
			acc.runs[t] += n
		}
	}
	for t, run := range acc.workerRun {
		workerRun(run, a.delay[t], b.delay[t], acc.masters[t])
	}
	acc.mach += b.mach - a.mach
	acc.steal += b.steal - a.steal
	acc.harness += b.harness - a.harness
}

// result fills res with the window's totals and rates.
func (acc *windowAcc) result(res *Result, hops []Hop, openPeak []int, closingPeak []map[string]int) {
	res.TCPExt = acc.ext
	res.DurationS = round(acc.length.Seconds(), 3)
	res.Requests, res.Errors = acc.requests, acc.errors
	if acc.length > 0 {
		res.ThroughputRPS = round(float64(acc.requests-acc.errors)/acc.length.Seconds(), 1)
	}
	res.LatencyMS = latencyStats(acc.latencies)
	res.CPUPressure = acc.pressure
	for i, h := range hops {
		hr := HopResult{Hop: h, Connects: acc.connects[i], OpenEnd: acc.openEnd[i], OpenPeak: max(openPeak[i], acc.openEnd[i]),
			TimeWaitClient: acc.tw[i][0], TimeWaitServer: acc.tw[i][1], TimeWaitBoth: acc.tw[i][2],
			IdleCloseClient: acc.idleClose[i][0], IdleCloseServer: acc.idleClose[i][1], ClosingPeak: map[string]int{}}
		for k, v := range closingPeak[i] {
			if v > 0 {
				hr.ClosingPeak[k] = v
			}
		}
		res.Hops = append(res.Hops, hr)
	}
	res.CPUMS, res.CPUPerRequestMS, res.Utilisation = map[string]float64{}, map[string]float64{}, map[string]float64{}
	res.RunDelayPerRequestMS, res.RunDelayPerRunMS = map[string]float64{}, map[string]float64{}
	ok := acc.requests - acc.errors
	stackMS := 0.0
	res.HarnessCPUMS = round(acc.harness.Seconds()*1000, 1)
	for _, t := range Tiers {
		ms := float64(acc.cpuTicks[t]) * 10
		if t == "load" && res.HarnessCPUMS > 0 {
			ms = max(0, ms-res.HarnessCPUMS) // the measurement's own work is not the load's
		}
		stackMS += ms
		res.CPUMS[t] = ms
		if ok > 0 {
			res.CPUPerRequestMS[t] = round(ms/float64(ok), 4)
			if d, has := acc.delay[t]; has {
				res.RunDelayPerRequestMS[t] = round(d.Seconds()*1000/float64(ok), 4)
				if n := acc.runs[t]; n > 0 {
					res.RunDelayPerRunMS[t] = round(d.Seconds()*1000/float64(n), 4)
				}
			}
		}
		if acc.length > 0 {
			res.Utilisation[t] = round(ms/float64(acc.length.Milliseconds()), 3)
		}
	}
	for t, run := range acc.workerRun {
		if sh := shares(run); sh != nil {
			if res.WorkerShares == nil {
				res.WorkerShares = map[string][]float64{}
			}
			res.WorkerShares[t] = sh
		}
	}
	res.MachineCPUMS, res.StealMS = float64(acc.mach)*10, float64(acc.steal)*10
	if w := float64(acc.length.Milliseconds()); w > 0 {
		res.BackgroundCPU = round(max(0, res.MachineCPUMS-stackMS)/w, 3)
	}
}

// shares gives each process's part of the processes' run time, largest
// first, to three places; nil for fewer than two processes or no time.
func shares(run map[int]int64) []float64 {
	var total int64
	for _, v := range run {
		total += max(v, 0)
	}
	if len(run) < 2 || total <= 0 {
		return nil
	}
	out := make([]float64, 0, len(run))
	for _, v := range run {
		out = append(out, round(float64(max(v, 0))/float64(total), 3))
	}
	slices.SortFunc(out, func(a, b float64) int { return cmp.Compare(b, a) })
	return out
}

// tierDelays reads each tier's threads' run delays ("load": this process).
func (st *Stack) tierDelays(pids map[string]int, mine *harnessCPU) (map[string]map[int]schedStat, error) {
	out := map[string]map[int]schedStat{}
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
	// This process's own threads only (its children are the tiers), but
	// for the measurement's.
	own := map[int]schedStat{}
	if tasks, err := os.ReadDir("/proc/self/task"); err == nil {
		for _, t := range tasks {
			if tid, err := strconv.Atoi(t.Name()); err == nil && (mine == nil || !mine.isOwn(tid)) {
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
