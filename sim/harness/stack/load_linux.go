package stack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

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
	Duration    time.Duration `json:"-"`
	// KeepAlive: each user keeps its connection to nginx (HTTP/1.1
	// keep-alive); otherwise it sends Connection: close and opens one per
	// request, as siege does by default ("connection = close").
	KeepAlive bool `json:"client_keepalive"`
}

// loadResult is what a load generator saw in the measured window.
type loadResult struct {
	requests, errors int
	latencies        []time.Duration
	elapsed          time.Duration
	pid              int // siege's process (0: this one)
	siege            map[string]float64
	cpuTicks         int64 // siege's CPU time (rusage), in clock ticks
	// closeIdle closes the connections the users kept (Go load): called
	// once the sockets have been counted.
	closeIdle func()
}

// goLoad runs Concurrency users against url until ctx ends, then lets each
// finish its request. Requests that end inside [from, to) are counted;
// atFrom, if not nil, runs at from (its error ends the load).
func goLoad(ctx context.Context, url string, l Load, from, to time.Time, atFrom func() error) (*loadResult, error) {
	res := &loadResult{}
	var trs []*http.Transport
	res.closeIdle = func() {
		for _, tr := range trs {
			tr.CloseIdleConnections()
		}
	}
	hook := make(chan error, 1)
	if atFrom != nil {
		go func() {
			t := time.NewTimer(time.Until(from))
			defer t.Stop()
			select {
			case <-ctx.Done():
				hook <- fmt.Errorf("stack: the load ended before its window began")
			case <-t.C:
				hook <- atFrom()
			}
		}()
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var firstErr error
	for u := 0; u < l.Concurrency; u++ {
		tr := &http.Transport{
			DialContext:         (&net.Dialer{}).DialContext,
			MaxIdleConnsPerHost: 1,
			DisableKeepAlives:   !l.KeepAlive,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
		}
		trs = append(trs, tr)
		client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
		wg.Add(1)
		go func(u int) {
			defer wg.Done()
			target := fmt.Sprintf("%s/test/%d", url, u+1)
			for ctx.Err() == nil {
				start := time.Now()
				ok := true
				resp, err := client.Get(target)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						ok = false
					}
				}
				end := time.Now()
				if err != nil {
					ok = false
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
				if end.Before(from) || !end.Before(to) {
					continue
				}
				mu.Lock()
				res.requests++
				if ok {
					res.latencies = append(res.latencies, end.Sub(start))
				} else {
					res.errors++
				}
				mu.Unlock()
				if !ok && err != nil {
					time.Sleep(10 * time.Millisecond) // do not spin on a refused connect
				}
			}
		}(u)
	}
	wg.Wait()
	res.elapsed = to.Sub(from)
	if atFrom != nil {
		if err := <-hook; err != nil {
			return res, err
		}
	}
	if res.requests > 0 && res.errors == res.requests && firstErr != nil {
		return res, fmt.Errorf("stack: every request failed: %w", firstErr)
	}
	return res, nil
}

// siegeLoad runs siege for l.Duration (whole seconds) with a resource file
// of its own: no verbose lines, JSON summary, connection = close unless
// the load keeps connections.
func siegeLoad(ctx context.Context, dir, url string, l Load) (*loadResult, error) {
	conn := "close"
	if l.KeepAlive {
		conn = "keep-alive"
	}
	rc := filepath.Join(dir, "siegerc")
	logf := filepath.Join(dir, "siege.log")
	if err := os.WriteFile(rc, []byte(fmt.Sprintf(`verbose = false
quiet = true
json_output = true
logging = false
logfile = %s
protocol = HTTP/1.1
connection = %s
concurrent = %d
delay = 0
benchmark = true
parser = false
limit = 10000
`, logf, conn, l.Concurrency)), 0o644); err != nil {
		return nil, err
	}
	secs := max(1, int(l.Duration.Round(time.Second)/time.Second))
	cmd := exec.CommandContext(ctx, "siege", "-R", rc, "-c", strconv.Itoa(l.Concurrency), "-t", fmt.Sprintf("%dS", secs), url+"/test/1")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Env = append(os.Environ(), "HOME="+dir)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("stack: siege: %w", err)
	}
	res := &loadResult{pid: cmd.Process.Pid}
	err := cmd.Wait()
	res.elapsed = time.Since(start)
	if err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("stack: siege: %v: %s", err, tail([]byte(out.String()), 1000))
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		res.cpuTicks = int64(cpu / (10 * time.Millisecond))
	}
	res.siege, err = parseSiege(out.String())
	if err != nil {
		return nil, err
	}
	res.requests = int(res.siege["transactions"] + res.siege["failed_transactions"])
	res.errors = int(res.siege["failed_transactions"])
	return res, nil
}

var siegeJSON = regexp.MustCompile(`(?s)\{[^{}]*"transactions"[^{}]*\}`)

// parseSiege reads siege's JSON summary ("transactions", "elapsed_time",
// "transaction_rate", "response_time" in seconds, ...).
func parseSiege(out string) (map[string]float64, error) {
	m := siegeJSON.FindString(out)
	if m == "" {
		return nil, fmt.Errorf("stack: no JSON summary in siege's output: %s", tail([]byte(out), 1000))
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(m), &raw); err != nil {
		return nil, fmt.Errorf("stack: siege's summary: %w", err)
	}
	res := map[string]float64{}
	for k, v := range raw {
		if f, ok := v.(float64); ok {
			res[k] = f
		}
	}
	return res, nil
}

// percentile of sorted durations, by linear interpolation between ranks.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	pos := p * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + time.Duration((pos-float64(i))*float64(sorted[i+1]-sorted[i]))
}

func latencyStats(d []time.Duration) map[string]float64 {
	if len(d) == 0 {
		return nil
	}
	s := slices.Clone(d)
	slices.Sort(s)
	var sum time.Duration
	for _, x := range s {
		sum += x
	}
	ms := func(x time.Duration) float64 { return float64(x.Microseconds()) / 1000 }
	return map[string]float64{"p50": ms(percentile(s, 0.5)), "p90": ms(percentile(s, 0.9)),
		"p99": ms(percentile(s, 0.99)), "mean": ms(sum / time.Duration(len(s)))}
}
