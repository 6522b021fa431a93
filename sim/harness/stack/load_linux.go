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

// loadResult is what a load generator saw in the measured windows.
type loadResult struct {
	windows  []loadWindow
	elapsed  time.Duration
	pid      int // siege's process (0: this one)
	siege    map[string]float64
	cpuTicks int64 // siege's CPU time (rusage), in clock ticks
	// closeIdle closes the connections the users kept (Go load): called
	// once the sockets have been counted.
	closeIdle func()
}

// loadWindow is one window's requests: those answered (or failed) in it.
type loadWindow struct {
	requests, errors int
	latencies        []time.Duration
}

// goLoad runs Concurrency users against url until ctx ends, then lets each
// finish its request. marks are the windows' edges: a request that ends in
// [marks[w], marks[w+1]) counts in window w; atMark, if not nil, runs at
// each edge but the last (its error ends the load).
func goLoad(ctx context.Context, url string, l Load, marks []time.Time, atMark func(w int) error) (*loadResult, error) {
	nw := max(0, len(marks)-1)
	res := &loadResult{windows: make([]loadWindow, nw)}
	var trs []*http.Transport
	res.closeIdle = func() {
		for _, tr := range trs {
			tr.CloseIdleConnections()
		}
	}
	hook := make(chan error, 1)
	if atMark != nil && nw > 0 {
		go func() {
			for w := range nw {
				t := time.NewTimer(time.Until(marks[w]))
				select {
				case <-ctx.Done():
					t.Stop()
					hook <- fmt.Errorf("stack: the load ended before its window %d began", w+1)
					return
				case <-t.C:
				}
				if err := atMark(w); err != nil {
					hook <- err
					return
				}
			}
			hook <- nil
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
				if w := windowOf(marks, end); w >= 0 {
					mu.Lock()
					lw := &res.windows[w]
					lw.requests++
					if ok {
						lw.latencies = append(lw.latencies, end.Sub(start))
					} else {
						lw.errors++
					}
					mu.Unlock()
				}
				if !ok && err != nil {
					time.Sleep(10 * time.Millisecond) // do not spin on a refused connect
				}
			}
		}(u)
	}
	wg.Wait()
	if nw > 0 {
		res.elapsed = marks[nw].Sub(marks[0])
	}
	if atMark != nil && nw > 0 {
		if err := <-hook; err != nil {
			return res, err
		}
	}
	total, failed := 0, 0
	for _, w := range res.windows {
		total, failed = total+w.requests, failed+w.errors
	}
	if total > 0 && failed == total && firstErr != nil {
		return res, fmt.Errorf("stack: every request failed: %w", firstErr)
	}
	return res, nil
}

// windowOf returns the window t falls in, or -1.
func windowOf(marks []time.Time, t time.Time) int {
	for w := 0; w+1 < len(marks); w++ {
		if !t.Before(marks[w]) && t.Before(marks[w+1]) {
			return w
		}
	}
	return -1
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
	res := &loadResult{pid: cmd.Process.Pid, windows: make([]loadWindow, 1)}
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
	res.windows[0].requests = int(res.siege["transactions"] + res.siege["failed_transactions"])
	res.windows[0].errors = int(res.siege["failed_transactions"])
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
