package stack

import "time"

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
	// RunDelayPerRunMS: the same wait per time a thread was given a CPU
	// (schedstat's third field): how long one wait lasts.
	RunDelayPerRunMS map[string]float64 `json:"run_delay_per_run_ms,omitempty"`
	// TCPExt: the namespace's TcpExt counters over the window (see
	// tcpExtKeys): TW counts every socket that entered TIME_WAIT.
	TCPExt map[string]int64 `json:"tcp_ext"`
	// NginxErrors counts lines of nginx's error log by what they say.
	NginxErrors map[string]int `json:"nginx_errors,omitempty"`
	// NginxWorkerConns: the load's established connections each nginx
	// worker held at the last sample, largest first (the kernel, not a
	// rule, spreads them).
	NginxWorkerConns []int `json:"nginx_worker_conns,omitempty"`
	// WorkerShares: for nginx and the app, when they run several worker
	// processes, each process's part of the tier's CPU time in the
	// window (from its threads' schedstat), largest first. The kernel
	// hands a new connection to whichever worker takes it first, and a
	// kept connection stays with that worker: the parts need not be equal.
	WorkerShares map[string][]float64 `json:"worker_shares,omitempty"`
	LoadAvg      string               `json:"loadavg_before"`
	// MachineCPUMS: the whole machine's busy CPU time in the window (all
	// CPUs, /proc/stat), StealMS what the hypervisor took; BackgroundCPU:
	// the machine's busy time that was not the stack's (other programs,
	// and interrupt work no process was charged for), in CPUs (1 = one
	// CPU busy all the window).
	MachineCPUMS  float64 `json:"machine_cpu_ms,omitempty"`
	StealMS       float64 `json:"steal_ms,omitempty"`
	BackgroundCPU float64 `json:"background_cpu,omitempty"`
	// ProbeUS: the median CPU time of the speed probe's fixed work in the
	// window (probe_linux.go): how fast the CPU ran for the stack.
	ProbeUS float64 `json:"cpu_probe_us,omitempty"`
	// HarnessCPUMS: the CPU time the measurement itself spent in the
	// load's process (sampling sockets, the probe, the readings at the
	// slices' edges); left out of the load's CPU, so it counts in
	// BackgroundCPU.
	HarnessCPUMS float64 `json:"harness_cpu_ms,omitempty"`
	// LoadStallsPerS and LoadStallMS: how often a goroutine of the load
	// that sleeps 1 ms woke up more than 0.2 ms late (the load's process
	// had no CPU), and how late (mean, percentiles).
	LoadStallsPerS float64            `json:"load_stalls_per_s,omitempty"`
	LoadStallMS    map[string]float64 `json:"load_stall_ms,omitempty"`
	// CPUPressure: /proc/pressure/cpu "some avg10" (%) at the start and
	// at the end of the window: how often something waited for a CPU.
	CPUPressure [2]float64 `json:"cpu_pressure"`
	// Calibration: the calibration window measured just before this one,
	// on the same stack under the same load (Load.Calibrate).
	Calibration *Result `json:"calibration,omitempty"`
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

// Load generators.
const (
	LoadGo    = "go"    // the harness's kind: a closed loop of Go clients
	LoadSiege = "siege" // the article's: siege -c N -t T
)

// Load describes the traffic of a run: Concurrency users, each sending a
// request as soon as the previous one is answered (a closed loop, as siege
// does with its default delay of 0), to GET /test/<id> on nginx.
type Load struct {
	Kind        string        `json:"kind"`
	Concurrency int           `json:"concurrency"`
	Warmup      time.Duration `json:"-"`
	Calibrate   time.Duration `json:"-"` // a calibration window besides Duration's (see Measure)
	Slice       time.Duration `json:"-"` // interleave the two windows in slices this long (0: one after the other)
	Duration    time.Duration `json:"-"`
	// KeepAlive: each user keeps its connection to nginx (HTTP/1.1
	// keep-alive); otherwise it sends Connection: close and opens one per
	// request, as siege does by default ("connection = close").
	KeepAlive bool `json:"client_keepalive"`
}

// A Hop is one TCP hop of the stack, named after the tier that accepts its
// connections (as the model names hops) and identified by the port that
// tier listens on: every connection of the hop has that port at the
// accepting end and an ephemeral port at the connecting end.
type Hop struct {
	Name string `json:"name"` // "nginx" (load → nginx), "app" (nginx → app), "redis" (app → redis)
	Port int    `json:"port"`
}

// A Spec is one isolated run: the stack, the load, and the sysctls of its
// network namespace.
type Spec struct {
	Name   string        `json:"name"`
	Config Config        `json:"config"`
	Load   Load          `json:"load"`
	Warmup time.Duration `json:"warmup"`
	// Calibrate: a calibration window before the measured one (see
	// Measure; 0: none).
	Calibrate time.Duration `json:"calibrate,omitempty"`
	// Slice interleaves the calibration and measured windows (Load.Slice).
	Slice    time.Duration `json:"slice,omitempty"`
	Duration time.Duration `json:"duration"`
	// PortRange ("low high") and TWReuse set ip_local_port_range and
	// tcp_tw_reuse in the namespace ("" and -1: the kernel's defaults).
	PortRange string `json:"port_range"`
	TWReuse   int    `json:"tw_reuse"`
}

// sliceLayout lays out l's windows: each slice's length and label (0: the
// measured window, 1: the calibration window).
func sliceLayout(l Load) ([]time.Duration, []int) {
	switch {
	case l.Calibrate <= 0:
		return []time.Duration{l.Duration}, []int{0}
	case l.Slice <= 0:
		return []time.Duration{l.Calibrate, l.Duration}, []int{1, 0}
	}
	// Spread the calibration slices evenly among the measured ones.
	nc := max(1, int(l.Calibrate/l.Slice))
	nm := max(1, int(l.Duration/l.Slice))
	var durs []time.Duration
	var labels []int
	c := 0
	for i := range nc + nm {
		// A calibration slice whenever the calibration share so far
		// falls behind its share of the total.
		if c < nc && (c*(nc+nm) <= i*nc) {
			labels = append(labels, 1)
			c++
		} else {
			labels = append(labels, 0)
		}
		durs = append(durs, l.Slice)
	}
	return durs, labels
}

// SliceLabels lists the labels of spec's slices in order (0: the measured
// window, 1: the calibration window).
func SliceLabels(spec Spec) []int {
	_, l := sliceLayout(Load{Calibrate: spec.Calibrate, Duration: spec.Duration, Slice: spec.Slice})
	return l
}
