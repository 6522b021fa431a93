package sim

import (
	"slices"
	"sort"
	"strings"
)

// Software names a tier's program: tier.NAME.software = "gunicorn" sets
// the keys that describe what the program does on its own, from its
// source and from runs of the real stack (labs/nginx-keepalive.stack-runs.json,
// which a test holds these to). Keys set after it override it. What the
// program costs (server_time, server_conn_time, client_conn_time) depends
// on the machine and is not preset: it is calibrated.
var Software = map[string]SoftwarePreset{
	"nginx": {
		About: "nginx 1.22: event-driven workers; closes a client connection idle 75 s (keepalive_timeout) or after 1000 requests (keepalive_requests); answers a client that sends Connection: close (siege's default) and closes at once, before the client does",
		Settings: []TierSetting{
			{"threads", 0}, {"keepalive_timeout", "75s"}, {"keepalive_requests", 1000},
			{"server_closes_first", nginxClosesFirst}, {"simultaneous_close", nginxSimultaneous},
		},
	},
	"gunicorn": {
		NoEarlyData: "gunicorn serves TLS through Python's ssl module, which has no 0-RTT (early data)",
		About:       "gunicorn 20.1, gthread workers: keeps a connection while requests come within --keep-alive (2 s), then closes it; with HTTP/1.0 (nginx without keepalive) it closes after each response, and usually before nginx does",
		Settings: []TierSetting{
			{"keepalive_timeout", "2s"}, {"keepalive_requests", 0},
			{"server_closes_first", gunicornClosesFirst}, {"simultaneous_close", gunicornSimultaneous},
		},
	},
	"flask": {
		NoEarlyData: "Flask's development server serves TLS through Python's ssl module, which has no 0-RTT (early data)",
		About:       "Flask 2.2's development server (Werkzeug 2.2, threaded): a thread per connection, and Connection: close on every response, so it never keeps a connection whatever the client asks",
		Settings: []TierSetting{
			{"threads", 0}, {"keepalive_requests", 1},
			{"server_closes_first", flaskClosesFirst}, {"simultaneous_close", flaskSimultaneous},
		},
	},
	"redis": {
		NoEarlyData: "redis-server's TLS never enables 0-RTT (early data)",
		About:       "redis-server 7.0: one event loop; timeout 0 keeps idle clients for ever, and it closes a connection only when the client has (redis-py closes first)",
		Settings: []TierSetting{
			{"workers", 1}, {"threads", 0}, {"keepalive_timeout", "0s"}, {"keepalive_requests", 0},
			{"server_closes_first", 0.0}, {"simultaneous_close", 0.0},
		},
	},
}

// A SoftwarePreset is what software = NAME sets on a tier.
type SoftwarePreset struct {
	About    string
	Settings []TierSetting
	// NoEarlyData, when set, says why the program as a server accepts no
	// TLS 1.3 early data: early_data on the hop into it is refused.
	NoEarlyData string
}

// Shares of the close race, the medians over the recorded runs of the real
// stack (labs/nginx-keepalive.stack-runs.json, 2 vCPUs shared with other work;
// TestSoftwareMatchesRecord holds them to it). They are not constants of
// the programs: they move with how busy the machine is (gunicorn's
// accepting-side share ranged 0.17–0.95 over the runs, Flask's 0.18–0.81).
const (
	nginxClosesFirst     = 0.92  // siege (Connection: close) → nginx: nginx closes right after its response
	nginxSimultaneous    = 0.0   // (siege's side held the rest)
	gunicornClosesFirst  = 0.64  // nginx (HTTP/1.0, Connection: close) → gunicorn
	gunicornSimultaneous = 0.005 //
	flaskClosesFirst     = 0.35  // nginx → Flask's development server
	flaskSimultaneous    = 0.04  //
)

// SoftwareNames lists the presets, sorted.
func SoftwareNames() []string {
	names := make([]string, 0, len(Software))
	for n := range Software {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// setSoftware applies preset name to tier i.
func (s *Scenario) setSoftware(key string, i int, value any) error {
	name, ok := value.(string)
	p, known := Software[name]
	if !ok || !known {
		return paramErr(key, "want one of %s, got %s", strings.Join(SoftwareNames(), ", "), describe(value))
	}
	tiers := slices.Clone(s.Tiers)
	tiers[i].Software = name
	tiers[i].Settings = append(slices.Clip(tiers[i].Settings), p.Settings...)
	s.Tiers = tiers
	return nil
}
