package sim

import (
	"slices"
	"strings"
)

// A chain of tiers describes a whole stack: the load → nginx → an app →
// Redis, say. Each tier is a server to the one before it and a client of
// the one after it; hop h carries the connections into tier h (hop 1 from
// the load's users to the first tier). A scenario without tiers is a
// chain of one (chain_one.go): its workers and the upstream they call.
//
// A tier is written as the scenario keys that describe it, set over the
// block's own values ("tier.app.workers" = 1). As a server it uses:
//
//	workers, threads   processes, and requests each serves at once (0: one
//	                   event loop, unlimited); each process runs one piece of
//	                   work at a time (CPython's GIL, nginx's and Redis's
//	                   event loop), its threads wait on calls in parallel
//	server_time        its own work per request
//	server_conn_time   its work to accept a new connection
//	conn_parallel      that work, and client_conn_time's, runs beside its
//	                   one piece at a time: for a program whose connection
//	                   work is system calls outside its lock (off in every
//	                   preset: a CPython app's waits for its GIL)
//	keepalive_timeout  it closes a connection idle this long (0: never)
//	keepalive_requests it closes a connection after this many requests
//	                   (1: it cannot keep connections, like Flask's
//	                   development server)
//	server_closes_first, simultaneous_close
//	                   where TIME_WAIT lands when a connection ends with its
//	                   exchange (see below)
//	rtt                the round trip of the hop into it
//	server_jitter      server_time varies uniformly by this fraction
//	dispatch           how its new connections are spread over its workers:
//	                   random (the kernel hands each to whichever worker
//	                   takes it first, as with nginx's workers), else in turn
//	tls, cert, handshake_cpu, resume_cpu, tls_resume, early_data
//	                   the TLS of the hop into it (tls.go): a caller resumes a session its pool or
//	                   cache holds when tls_resume is set; none by default
//	dns, dns_cache_timeout
//	                   the lookup of its name before a new connection
//	                   (dns.go), cached by the caller's
//	                   pool or cache; none by default
//	response_bytes, mss, init_cwnd, slow_start_after_idle
//	                   its responses and their slow start (tcp.go)
//	max_requests       its workers are replaced after this many requests
//	                   (pm.max_requests), their pools to the next tier with
//	                   them
//	setup_rtts         round trips its caller spends on a new connection
//	                   before the first request (go-redis's HELLO)
//	drop_cpu           its caller's CPU to drop a kept connection it finds
//	                   closed or too old
//	connect_cpu, client_cpu, client_read_cpu
//	                   the caller's CPU for the hop, on the call's time
//	                   (client_conn_time is the caller's
//	                   work on its own tier's CPU)
//
// As a client of the next tier it uses: reuse (none, request, pool or
// process, upstream-keepalive), upstream_keepalive, pool_max,
// pool_max_idle, pool_full, calls_per_request, client_conn_time,
// max_idle_age, max_lifetime, retry_on_race. The load's users keep their
// connection to the first tier when client_keepalive is set.
//
// software = "nginx", "gunicorn", "flask" or "redis" sets the keys that
// describe what that program does on its own (chain_software.go).
//
// Who closes first. A connection that one side drops on its own (redis-py
// freeing its client, nginx evicting its least recently used idle
// connection, a pool closing a spare) puts TIME_WAIT on that side; a server
// closing an idle connection on its timer puts it on the server. When a
// connection ends with its exchange (HTTP/1.0 Connection: close, or a
// server that cannot keep connections), both ends close as soon as the
// response is complete and the first FIN decides: the accepting side holds
// TIME_WAIT for a share server_closes_first of them, both sides for a
// share simultaneous_close, the connecting side for the rest. The shares
// are measured (the connlab notes on the real stack): they depend on the
// two programs and on how the machine schedules them.

// A TierSpec is one tier as a block writes it: a name and the keys set for
// it, applied in order over the block's values.
type TierSpec struct {
	Name     string
	Software string // the preset applied last (chain_software.go), if any
	Settings []TierSetting
}

// A TierSetting is one key of a tier.
type TierSetting struct {
	Key   string
	Value any
}

// MaxTiers bounds a chain.
const MaxTiers = 8

// tierName reports whether name is a tier's name: [a-z][a-z0-9_]*. (A
// regexp would bring package regexp into the pages' WebAssembly model.)
func tierName(name string) bool {
	for i, c := range name {
		if !('a' <= c && c <= 'z' || i > 0 && ('0' <= c && c <= '9' || c == '_')) {
			return false
		}
	}
	return name != ""
}

// blockOnlyKeys describe the load or the machine, not a tier.
var blockOnlyKeys = map[string]bool{
	"mode": true, "requests": true, "duration": true, "load": true, "concurrency": true,
	"think_time": true, "pause_every": true, "pause": true, "rate": true, "arrival": true,
	"client_rtt": true, "port_range": true, "tw_reuse": true, "loopback": true, "linger": true,
	"series_interval": true, "client_keepalive": true, "cpus": true, "cpu_background": true, "load_cpu": true, "load_stalls": true, "load_stall": true, "load_stall_p99": true,
}

// tierUnsupported are keys the chain does not model: each tier answers
// small responses.
var tierUnsupported = map[string]string{
	"app_time":           "a tier's own work is its server_time",
	"server_concurrency": "a tier's concurrency is its workers and threads",
	"closer":             "tiers take server_closes_first and simultaneous_close",
}

func isTierKey(key string) bool { return strings.HasPrefix(key, "tier.") }

// AddTier appends a tier named name to the chain; its keys are then set
// with Set("tier.NAME.KEY", value).
func (s *Scenario) AddTier(name string) error {
	if !tierName(name) {
		return paramErr("tier", "name %q: want lower-case letters, digits and _, starting with a letter (name = \"app\")", name)
	}
	if slices.ContainsFunc(s.Tiers, func(t TierSpec) bool { return t.Name == name }) {
		return paramErr("tier", "two tiers are named %q", name)
	}
	if len(s.Tiers) >= MaxTiers {
		return paramErr("tier", "at most %d tiers", MaxTiers)
	}
	s.Tiers = append(slices.Clip(s.Tiers), TierSpec{Name: name})
	return nil
}

// TierNames lists the chain's tiers in order.
func (s *Scenario) TierNames() []string {
	names := make([]string, len(s.Tiers))
	for i, t := range s.Tiers {
		names[i] = t.Name
	}
	return names
}

func (s *Scenario) tierIndex(key string) (i int, sub string, err error) {
	rest := strings.TrimPrefix(key, "tier.")
	name, sub, ok := strings.Cut(rest, ".")
	if !ok || sub == "" || strings.Contains(sub, ".") {
		return -1, "", paramErr(key, "want tier.NAME.KEY, e.g. tier.app.workers")
	}
	for i, t := range s.Tiers {
		if t.Name == name {
			return i, sub, nil
		}
	}
	if len(s.Tiers) == 0 {
		return -1, "", paramErr(key, "no tier named %q: this block has no [[tier]] tables", name)
	}
	return -1, "", paramErr(key, "no tier named %q (tiers: %s)", name, strings.Join(s.TierNames(), ", "))
}

// setTierKey sets "tier.NAME.KEY": the value is checked now, applied when
// the tier's scenario is built (over the block's values, which may still
// change).
func (s *Scenario) setTierKey(key string, value any) error {
	i, sub, err := s.tierIndex(key)
	if err != nil {
		return err
	}
	if sub == "software" {
		return s.setSoftware(key, i, value)
	}
	if blockOnlyKeys[sub] {
		return paramErr(key, "%s describes the load or the machine: set it on the block, not on a tier", sub)
	}
	if why, ok := tierUnsupported[sub]; ok {
		return paramErr(key, "%s is not a tier key: %s", sub, why)
	}
	scratch := Default()
	if err := scratch.Set(sub, value); err != nil {
		if pe, ok := err.(*ParamError); ok {
			return paramErr(key, "%s", pe.Msg)
		}
		return paramErr(key, "%v", err)
	}
	tiers := slices.Clone(s.Tiers)
	tiers[i].Settings = append(slices.Clip(tiers[i].Settings), TierSetting{Key: sub, Value: value})
	s.Tiers = tiers
	return nil
}

func (s *Scenario) getTierKey(key string) (string, bool) {
	i, sub, err := s.tierIndex(key)
	if err != nil {
		return "", false
	}
	if sub == "software" {
		return s.Tiers[i].Software, true
	}
	t := s.TierScenario(i)
	return t.Get(sub)
}

// TierScenario returns tier i's scenario: the block's values, then the
// tier's own keys.
func (s *Scenario) TierScenario(i int) Scenario {
	t := *s
	t.Tiers = nil
	for _, st := range s.Tiers[i].Settings {
		_ = t.Set(st.Key, st.Value) // checked by setTierKey
	}
	return t
}

// validateNoChain refuses the keys only a chain reads, on a block without
// tiers: they would be ignored.
func (s *Scenario) validateNoChain() error {
	switch {
	case s.CPUs != 0:
		return paramErr("cpus", "shared CPUs are modelled for a block with [[tier]] tables only")
	case s.CPUBackground != 0:
		return paramErr("cpu_background", "shared CPUs are modelled for a block with [[tier]] tables only")
	case s.LoadCPU != 0:
		return paramErr("load_cpu", "the load generator's CPU is modelled for a block with [[tier]] tables only")
	case s.LoadStalls != 0 || s.LoadStall != 0 || s.LoadStallP99 != 0:
		return paramErr("load_stalls", "the load generator's stalls are modelled for a block with [[tier]] tables only")
	case len(s.WorkerShares) > 0:
		return paramErr("worker_shares", "the spread of connections over workers is modelled for a block with [[tier]] tables only")
	}
	return nil
}

// validateChain checks what a chain needs beyond single keys.
func (s *Scenario) validateChain() error {
	if s.Mode != "web" {
		return paramErr("mode", "tiers run in web mode")
	}
	if s.TLS != "none" {
		return paramErr("tls", "each hop has the TLS of its tier: set tls = \"none\" on the block and tier.NAME.tls on the tiers reached over TLS")
	}
	if s.DNS != 0 {
		return paramErr("dns", "each hop looks up the name of its tier: set dns = \"0s\" on the block and tier.NAME.dns on the tiers reached by name")
	}
	if s.CPUs > 0 && s.CPUBackground >= float64(s.CPUs) {
		return paramErr("cpu_background", "%g CPUs of other work leave nothing of cpus = %d", s.CPUBackground, s.CPUs)
	}
	if (s.LoadStalls > 0) != (s.LoadStall > 0) {
		return paramErr("load_stalls", "set both load_stalls (how often) and load_stall (how long)")
	}
	if s.LoadStallP99 > 0 && s.LoadStallP99 < s.LoadStall {
		return paramErr("load_stall_p99", "%s is below the median load_stall = %s", FormatDuration(s.LoadStallP99), FormatDuration(s.LoadStall))
	}
	if s.CPUs == 0 && s.CPUBackground > 0 {
		return paramErr("cpu_background", "set cpus, the machine's CPUs, that the other work shares")
	}
	if s.ServerConcurrency != 0 || s.AppTime != 0 {
		return paramErr("server_concurrency", "a block with tiers describes each tier's work and concurrency in its [[tier]] table")
	}
	if len(s.WorkerShares) > 0 {
		return paramErr("worker_shares", "each tier has its own workers: set tier.NAME.worker_shares")
	}
	for i := range s.Tiers {
		t := s.TierScenario(i)
		name := "tier." + s.Tiers[i].Name + "."
		if len(t.WorkerShares) > t.Workers {
			return paramErr(name+"worker_shares", "%d shares for %d workers", len(t.WorkerShares), t.Workers)
		}
		if p, ok := Software[s.Tiers[i].Software]; ok && p.NoEarlyData != "" && t.TLS == TLS13 && t.EarlyData {
			return paramErr(name+"early_data", "%s: set it on a tier whose server accepts 0-RTT (nginx with ssl_early_data)", p.NoEarlyData)
		}
		if t.SimultaneousClose+t.ServerClosesFirst > 1 {
			return paramErr(name+"simultaneous_close", "server_closes_first + simultaneous_close = %g: the shares cannot exceed 1", t.SimultaneousClose+t.ServerClosesFirst)
		}
		if t.Reuse == "pool" && t.PoolMax > 0 && t.PoolMaxIdle > t.PoolMax {
			return paramErr(name+"pool_max_idle", "%d idle connections cannot exceed pool_max = %d", t.PoolMaxIdle, t.PoolMax)
		}
	}
	return nil
}

// calibratedBlockKeys and calibratedTierKeys are what a real run of a
// stack measures and gives its model itself (the harness's calibrated):
// the machine's other work, the load generator's CPU and stalls, and each
// tier's costs, close-race shares and spread over its processes.
var (
	calibratedBlockKeys = []string{"cpu_background", "load_cpu", "load_stalls", "load_stall", "load_stall_p99"}
	calibratedTierKeys  = []string{"server_time", "server_conn_time", "client_conn_time", "server_closes_first", "simultaneous_close", "worker_shares"}
)

// Calibrated reports whether key (a block key, or tier.NAME.KEY) is one a
// real run of a stack measures itself: a lab's printed model may take it
// from the lab's record without the record going stale.
func Calibrated(key string) bool {
	if name, ok := strings.CutPrefix(key, "tier."); ok {
		if i := strings.IndexByte(name, '.'); i >= 0 {
			return slices.Contains(calibratedTierKeys, name[i+1:])
		}
		return false
	}
	return slices.Contains(calibratedBlockKeys, key)
}
