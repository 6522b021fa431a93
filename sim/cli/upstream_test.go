package cli

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/connlab/connlab/internal/testutil"
	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/kernel"
	"github.com/connlab/connlab/sim/phpwasm"
)

// upstreamRun is `sim upstream` running in this process (Run, not the
// binary: see startUpstream for that): its output line by line, what it
// wrote to stderr, and its exit code once its context is cancelled.
type upstreamRun struct {
	lines <-chan string
	errb  *testutil.SyncBuffer
	done  <-chan int
}

// runUpstream runs `sim upstream args...` until ctx is cancelled.
func runUpstream(ctx context.Context, args ...string) *upstreamRun {
	pr, pw := io.Pipe()
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	done := make(chan int, 1)
	errb := &testutil.SyncBuffer{}
	go func() {
		done <- Run(ctx, &Env{Stdin: strings.NewReader(""), Stdout: pw, Stderr: errb}, append([]string{"upstream"}, args...))
		pw.Close()
	}()
	return &upstreamRun{lines: lines, errb: errb, done: done}
}

// TestUpstream starts sim upstream, calls it twice on one connection the
// way the printed curl command does (with a Go client), and stops it.
func TestUpstream(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	up := runUpstream(ctx, "--rtt", "20ms", "--tls", "1.3", "--server-time", "0s", "--response-bytes", "500")
	var url, caFile, curl string
	for l := range up.lines {
		f := strings.Fields(l)
		switch {
		case len(f) >= 2 && f[0] == "upstream":
			url = f[1]
		case len(f) >= 2 && f[0] == "CA":
			caFile = f[1]
		case strings.HasPrefix(l, "  curl "):
			curl = l
		}
		if strings.HasPrefix(l, "serving until Ctrl-C") {
			break
		}
	}
	if url == "" || caFile == "" || !strings.Contains(curl, "--cacert "+caFile) || !strings.Contains(curl, "%{time_appconnect}") {
		t.Fatalf("output: url %q ca %q curl %q; stderr %s", url, caFile, curl, up.errb.String())
	}
	for _, p := range sim.CurlPhases() {
		if !strings.Contains(curl, p.Key+" %{"+p.Curl+"} ") {
			t.Errorf("the curl command does not print %s: %s", p.Curl, curl)
		}
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	port := url[strings.LastIndex(url, ":")+1 : len(url)-1]
	tr := &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool},
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, "127.0.0.1:"+port) // curl --resolve
		},
	}
	var took []time.Duration
	busy := kernel.BusyDuring(func() {
		for range 2 {
			st := time.Now()
			resp, err := (&http.Client{Transport: tr}).Get(url)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			took = append(took, time.Since(st))
			if resp.StatusCode != 200 || len(b) == 0 || len(b) >= 500 {
				t.Fatalf("status %d, %d bytes", resp.StatusCode, len(b))
			}
		}
	})
	// New connection: the handshake's round trip charged on the first bytes,
	// TLS 1.3 (1 RTT), the request (1 RTT). Reused: 1 RTT. The emulated
	// round trips are the least a call takes on any machine; a reused call
	// of two round trips (40 ms or more) fails unless other programs kept
	// the machine busy meanwhile.
	switch {
	case took[0] < 60*time.Millisecond || took[1] < 20*time.Millisecond:
		t.Errorf("calls took %v, want at least 60 ms then 20 ms", took)
	case took[1] > 40*time.Millisecond && busy == "":
		t.Errorf("calls took %v, want about 60 ms then 20 ms", took)
	case took[1] > 40*time.Millisecond:
		t.Logf("calls took %v; the second's upper bound not asserted: %s", took, busy)
	}
	tr.CloseIdleConnections()
	cancel()
	if code := <-up.done; code != 0 {
		t.Errorf("exit %d: %s", code, up.errb.String())
	}
	var rest []string
	for l := range up.lines {
		rest = append(rest, l)
	}
	if !strings.Contains(strings.Join(rest, "\n"), "stopped: 2 requests on 1 connections") {
		t.Errorf("after Ctrl-C: %q", rest)
	}
	if _, err := os.Stat(caFile); !os.IsNotExist(err) {
		t.Errorf("CA file left behind: %v", err)
	}
}

func TestUpstreamErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"upstream", "--listen", "0.0.0.0:0"}, "only loopback"},
		{[]string{"upstream", "--dns-listen", "192.0.2.1:53"}, "only loopback"},
		{[]string{"upstream", "--rtt", "fast"}, "--rtt: rtt: want a duration"},
		{[]string{"upstream", "--tls", "1.4"}, "--tls: tls: want one of none, 1.2, 1.3"},
		{[]string{"upstream", "extra"}, "takes no arguments"},
	} {
		out, errs, code := runSim(t, c.args...)
		if code != 2 || !strings.Contains(out+errs, c.want) {
			t.Errorf("sim %v: exit %d, %q; want exit 2 with %q", c.args, code, out+errs, c.want)
		}
	}
}

// TestUpstreamPHP: the printed PHP command runs the PHP lab's handle.php
// against the upstream with the php on PATH: two calls, the second on the
// first's connection.
func TestUpstreamPHP(t *testing.T) {
	if _, _, err := phpwasm.FindNative(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	up := runUpstream(ctx, "--rtt", "5ms", "--tls", "1.2")
	cmd := ""
	for l := range up.lines {
		if strings.Contains(l, " php -d auto_prepend_file=") {
			cmd = strings.TrimSpace(l)
		}
		if strings.HasPrefix(l, "serving until Ctrl-C") {
			break
		}
	}
	if !strings.Contains(cmd, "handle.php") {
		t.Fatalf("no PHP command printed; stderr %s", up.errb.String())
	}
	out, err := exec.Command("sh", "-c", cmd).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	var got []int
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m struct {
			NumConnects int    `json:"num_connects"`
			Errno       int    `json:"errno"`
			Error       string `json:"error"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil || m.Errno != 0 {
			t.Fatalf("%s printed %q (%v)", cmd, l, m.Error)
		}
		got = append(got, m.NumConnects)
	}
	if fmt.Sprint(got) != "[1 0]" {
		t.Errorf("num_connects %v, want [1 0]", got)
	}
	cancel()
	<-up.done
}
