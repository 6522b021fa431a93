package measure

import (
	"bytes"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
)

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Each real file parses in the format it was told from, with the new and
// reused calls its tool reported.
func TestRealFiles(t *testing.T) {
	for _, tc := range []struct {
		file          string
		format        Format
		calls         int
		newByHost     map[string]int
		reusedByHost  map[string]int
		minPool       map[string]int
		avoidableHost map[string]int
	}{
		// curl 7.88: one invocation of 4 URLs (1 new, 3 reused), then 3
		// invocations of one (new each); sim upstream said "7 requests on
		// 4 connections".
		{"testdata/curl-7.88.ndjson", Curl, 7,
			map[string]int{"https://api.connlab.test:41763": 4}, map[string]int{"https://api.connlab.test:41763": 3},
			map[string]int{"https://api.connlab.test:41763": 1}, map[string]int{"https://api.connlab.test:41763": 3}},
		// Chromium: the page and its files on one connection (41); the
		// upstream: 3 fetches in turn on connection 79, then 3 at once,
		// on 79 and a new 125.
		{"testdata/chromium.har", HAR, 10,
			map[string]int{"http://127.0.0.1:38075": 1, "https://127.0.0.1:43795": 2},
			map[string]int{"http://127.0.0.1:38075": 3, "https://127.0.0.1:43795": 4},
			map[string]int{"http://127.0.0.1:38075": 2, "https://127.0.0.1:43795": 3},
			map[string]int{"http://127.0.0.1:38075": 0, "https://127.0.0.1:43795": 0}},
		// Hand-made k6: two VUs open a connection each, reuse them, and
		// one is opened again later.
		{"testdata/k6-handmade.ndjson", K6, 6,
			map[string]int{"https://127.0.0.1:8443": 3}, map[string]int{"https://127.0.0.1:8443": 3},
			map[string]int{"https://127.0.0.1:8443": 2}, map[string]int{"https://127.0.0.1:8443": 1}},
	} {
		t.Run(string(tc.format), func(t *testing.T) {
			calls, f, err := Read(bytes.NewReader(read(t, tc.file)), "", DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			if f != tc.format || len(calls) != tc.calls {
				t.Fatalf("%s: %d calls, want %s and %d", f, len(calls), tc.format, tc.calls)
			}
			sums := Summarize(calls)
			if len(sums) != len(tc.newByHost) {
				t.Fatalf("%d hosts, want %d", len(sums), len(tc.newByHost))
			}
			for _, s := range sums {
				if s.NewConns != tc.newByHost[s.Host] || s.Reused != tc.reusedByHost[s.Host] {
					t.Errorf("%s: %d new, %d reused; want %d, %d", s.Host, s.NewConns, s.Reused, tc.newByHost[s.Host], tc.reusedByHost[s.Host])
				}
				if s.MinPool != tc.minPool[s.Host] || s.Avoidable != tc.avoidableHost[s.Host] {
					t.Errorf("%s: min pool %d, avoidable %d; want %d, %d", s.Host, s.MinPool, s.Avoidable, tc.minPool[s.Host], tc.avoidableHost[s.Host])
				}
				if s.Avoidable > 0 && (s.SavedMS <= 0 || math.Abs(s.SavedMS-float64(s.Avoidable)*s.SetupP50) > 1e-9) {
					t.Errorf("%s: saved %v ms", s.Host, s.SavedMS)
				}
			}
			// Told the format, it reads the same.
			again, _, err := Parse(read(t, tc.file), tc.format, DefaultLimits)
			if err != nil || len(again) != len(calls) {
				t.Errorf("with the format given: %d calls, %v", len(again), err)
			}
		})
	}
}

// The curl file's setups are what curl measured: appconnect on a new
// connection, nothing on a reused one.
func TestCurlPhases(t *testing.T) {
	calls, _, err := Parse(read(t, "testdata/curl-7.88.ndjson"), Curl, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	first, second := calls[0], calls[1]
	if !first.NewConn || math.Abs(first.AppConnect-24.166) > 1e-9 || math.Abs(first.Setup()-24.166) > 1e-9 {
		t.Errorf("first call %+v", first)
	}
	if second.NewConn || second.Setup() != 0 || second.Connect < second.NameLookup || math.Abs(second.Total-12.334) > 1e-9 {
		t.Errorf("second call %+v", second)
	}
}

const harEntryOK = `{"startedDateTime":"2026-12-07T23:16:57.557Z","time":57.1,"request":{"url":"https://127.0.0.1:1/"},"timings":{"blocked":2.5,"dns":0,"ssl":29.9,"connect":37.7,"send":0.4,"wait":12.2,"receive":4.3},"connection":"79"}`

func har(entries ...string) string {
	return `{"log":{"version":"1.2","entries":[` + strings.Join(entries, ",") + `]}}`
}

const curlOK = `{"time_namelookup":0.00001,"time_connect":0.0001,"time_appconnect":0.024,"time_starttransfer":0.036,"time_total":0.0363,"num_connects":1,"url_effective":"https://127.0.0.1:1/"}`

func k6Point(metric, value string) string {
	return `{"type":"Point","metric":"` + metric + `","data":{"time":"2026-12-07T23:20:00.05Z","value":` + value + `,"tags":{"url":"https://127.0.0.1:1/","method":"GET"}}}`
}

func k6Lines(skip string) string {
	var b []string
	for _, m := range k6Metrics {
		if m != skip {
			b = append(b, k6Point(m, "1.5"))
		}
	}
	return strings.Join(b, "\n")
}

// Hostile input: each case's error names the entry and the field.
func TestHostile(t *testing.T) {
	entry := func(old, new string) string { return strings.Replace(harEntryOK, old, new, 1) }
	for _, tc := range []struct {
		name, in string
		format   Format
		want     string
	}{
		{"unknown", `{"hello":1}`, "", "unknown format"},
		{"not json", `<html>`, "", "unknown format"},
		{"empty", "  \n", "", "empty"},
		{"har entries not array", `{"log":{"entries":{}}}`, HAR, "har input: log.entries: an object where an array belongs"},
		{"har no entries", har(), HAR, "har input: log.entries: empty"},
		{"har entry not object", har(harEntryOK, `7`), HAR, "har entry 1: a number where an object belongs"},
		{"har negative", har(harEntryOK, entry(`"connect":37.7`, `"connect":-5`)), HAR, "har entry 1: timings.connect: -5 is negative (only -1, not applicable, is allowed)"},
		{"har negative send", har(entry(`"send":0.4`, `"send":-1`)), HAR, "har entry 0: timings.send: -1 is negative"},
		{"har wrong type", har(harEntryOK, harEntryOK, entry(`"wait":12.2`, `"wait":"12"`)), HAR, "har entry 2: timings.wait: a string where a number belongs"},
		{"har missing url", har(entry(`"url":"https://127.0.0.1:1/"`, `"uri":"x"`)), HAR, "har entry 0: request.url: missing"},
		{"har missing timings", har(entry(`"timings"`, `"timing"`)), HAR, "har entry 0: timings: missing"},
		{"har not finite", har(entry(`"time":57.1`, `"time":1e999`)), HAR, "har entry 0: time: 1e999 is not a finite number"},
		{"har bad date", har(entry(`2026-12-07T23:16:57.557Z`, `yesterday`)), HAR, `har entry 0: startedDateTime: "yesterday" is not an ISO 8601 date`},
		{"har connection number", har(entry(`"connection":"79"`, `"connection":79`)), HAR, "har entry 0: connection: a number where a string belongs"},
		{"har relative url", har(entry(`https://127.0.0.1:1/`, `/x`)), HAR, `har entry 0: request.url: "/x" is not an absolute URL`},
		{"curl not object", curlOK + "\n[1]\n", Curl, "curl line 2: not a JSON object"},
		{"curl negative", curlOK + "\n\n" + strings.Replace(curlOK, `"time_total":0.0363`, `"time_total":-0.1`, 1), Curl, "curl line 3: time_total: -0.1 is negative"},
		{"curl missing", strings.Replace(curlOK, `"num_connects":1,`, "", 1), Curl, "curl line 1: num_connects: missing"},
		{"curl wrong type", strings.Replace(curlOK, `"time_connect":0.0001`, `"time_connect":null`, 1), Curl, "curl line 1: time_connect: null where a number belongs"},
		{"curl huge", strings.Replace(curlOK, `"time_connect":0.0001`, `"time_connect":2e308`, 1), Curl, "curl line 1: time_connect: 2e308 is not a finite number"},
		{"curl count", strings.Replace(curlOK, `"num_connects":1`, `"num_connects":0.5`, 1), Curl, "curl line 1: num_connects: 0.5 is not a count"},
		{"k6 negative", k6Lines("") + "\n" + strings.Replace(k6Point("http_req_waiting", "1"), "05Z", "06Z", 1) + "\n" + strings.Replace(k6Point("http_req_connecting", "-3"), "05Z", "06Z", 1), K6, "k6 line 9: data.value: -3 is negative"},
		{"k6 missing point", k6Lines("http_req_waiting"), K6, "k6 line 1: metric: the request has no http_req_waiting point"},
		{"k6 twice", k6Lines("") + "\n" + k6Point("http_req_waiting", "2"), K6, "k6 line 8: metric: a second http_req_waiting point for the request of line 1"},
		{"k6 no url", strings.Replace(k6Point("http_req_blocked", "1"), `"url"`, `"uri"`, 1), K6, "k6 line 1: data.tags.url: missing"},
		{"k6 tags wrong", strings.Replace(k6Point("http_req_blocked", "1"), `"method":"GET"`, `"method":7`, 1), K6, "k6 line 1: data.tags: an object where an object of strings belongs"},
		{"k6 time number", strings.Replace(k6Point("http_req_blocked", "1"), `"2026-12-07T23:20:00.05Z"`, `1700000000`, 1), K6, "k6 line 1: data.time: a number where a string belongs"},
		{"k6 no points", `{"type":"Metric","metric":"vus","data":{}}`, K6, "k6 input: no http_req_* points"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := Parse([]byte(tc.in), tc.format, DefaultLimits)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if tc.format != "" {
				// Detected, the same input gives the same error.
				if _, _, err2 := Parse([]byte(tc.in), "", DefaultLimits); err2 != nil && tc.name != "har entries not array" && err2.Error() != err.Error() && !strings.Contains(err2.Error(), "unknown format") {
					t.Errorf("detected: %v", err2)
				}
			}
		})
	}
}

// The limits: bytes before the input is read whole, calls as they come.
func TestLimits(t *testing.T) {
	lim := Limits{MaxBytes: 1000, MaxCalls: 3}
	_, _, err := Read(strings.NewReader(strings.Repeat(" ", 1001)), "", lim)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more than 1000 bytes") {
		t.Errorf("too large: %v", err)
	}
	for _, tc := range []struct {
		in, want string
	}{
		{har(harEntryOK, harEntryOK, harEntryOK, harEntryOK), "har entry 3: more than 3 calls (the limit)"},
		{strings.Repeat(curlOK+"\n", 4), "curl line 4: more than 3 calls (the limit)"},
		{k6Lines("") + "\n" + strings.ReplaceAll(k6Lines(""), "05Z", "06Z") + "\n" + strings.ReplaceAll(k6Lines(""), "05Z", "07Z") + "\n" + strings.ReplaceAll(k6Lines(""), "05Z", "08Z"), "k6 line 22: more than 3 calls (the limit)"},
	} {
		_, _, err := Parse([]byte(tc.in), "", lim)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
	if DefaultLimits.MaxBytes != 50<<20 || DefaultLimits.MaxCalls != 1_000_000 {
		t.Errorf("default limits %+v", DefaultLimits)
	}
}

// A HAR entry with dns, connect and ssl -1 on a connection seen before
// reused it; on a new connection id it opened one (a preconnect).
func TestHARReuseRule(t *testing.T) {
	reused := strings.NewReplacer(`"dns":0`, `"dns":-1`, `"ssl":29.9`, `"ssl":-1`, `"connect":37.7`, `"connect":-1`).Replace(harEntryOK)
	other := strings.Replace(reused, `"connection":"79"`, `"connection":"80"`, 1)
	none := strings.Replace(reused, `,"connection":"79"`, ``, 1)
	calls, _, err := Parse([]byte(har(harEntryOK, reused, other, none)), HAR, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []bool{true, false, true, false} {
		if calls[i].NewConn != want {
			t.Errorf("entry %d: new %v, want %v", i, calls[i].NewConn, want)
		}
	}
	if c := calls[0]; math.Abs(c.TLS-29.9) > 1e-9 || math.Abs(c.TCP-7.8) > 1e-9 || math.Abs(c.AppConnect-(2.5+37.7)) > 1e-9 {
		t.Errorf("entry 0: %+v", c)
	}
}

// The pool's minimum is the peak of calls at once; touching calls do not
// overlap.
func TestPeakConcurrency(t *testing.T) {
	calls, _, err := Parse([]byte(har(
		harEntryOK,
		strings.Replace(harEntryOK, "57.557Z", "57.600Z", 1),
		strings.Replace(harEntryOK, "57.557Z", "57.6142Z", 1),
	)), HAR, DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	// Each lasts 57.1 ms: the first ends at .6142 when the third starts.
	s := Summarize(calls)[0]
	if s.MinPool != 2 || s.MinPoolFrom != "peak_concurrency" {
		t.Errorf("min pool %d from %s", s.MinPool, s.MinPoolFrom)
	}
}
