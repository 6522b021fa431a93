package cli

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness"
	"github.com/connlab/connlab/sim/lab"
	"github.com/connlab/connlab/sim/loopback"
	"github.com/connlab/connlab/sim/phpwasm"
)

func upstreamCommand() *command {
	return &command{
		name:    "upstream",
		summary: "start a lab's HTTPS upstream (with injected RTT) and DNS server on loopback for any client, until Ctrl-C",
		usage:   "[--rtt 30ms] [--tls 1.3] [--keepalive-timeout 75s] [--keepalive-requests 1000] [--server-time 2ms] [--response-bytes 1000] [--cert rsa2048] [--tickets=true] [--dns 0s] [--set key=value]... [--listen 127.0.0.1:0]",
		example: `  sim upstream --rtt 30ms --tls 1.2
  sim upstream --rtt 12ms --tls 1.2 --response-bytes 20000 --keepalive-timeout 75s --dns 30ms

It prints the https:// URL, the CA certificate file (PEM), a ready curl -w
command and a ready PHP command (the PHP lab's handle.php with the php on
PATH), then serves until Ctrl-C. The server is the one sim validate uses:
Go's crypto/tls with a CA made at start, nginx's keep-alive semantics, the
emulated round trip at the server's end of each connection (with slow start
for large responses).

One difference from sim validate: there, the harness's own clients wait one
RTT in their dialer for the TCP handshake. A client the harness does not
own (curl, PHP, a browser) connects to loopback at once, so the handshake's
round trip is charged on the first bytes the server receives instead. curl
then shows time_connect near 0 and time_appconnect (or, without TLS,
time_starttransfer) one RTT later than over a real network; the total is the
same. On a reused connection nothing changes.

The DNS server answers *.connlab.test with 127.0.0.1 after --dns; curl can
skip it with --resolve (the printed command does), or you can ask it with
dig @127.0.0.1 -p PORT api.connlab.test.`,
		run: upstreamCmd,
	}
}

func upstreamCmd(ctx context.Context, env *Env, args []string) error {
	c := find("upstream")
	fs := flag.NewFlagSet("upstream", flag.ContinueOnError)
	def := sim.Default()
	keys := []struct{ flag, key, help string }{
		{"rtt", "rtt", "round-trip time injected between the client and the server"},
		{"tls", "tls", "TLS version: 1.2, 1.3 or none (plain HTTP)"},
		{"keepalive-timeout", "keepalive_timeout", "the server closes a connection idle this long (0s: never)"},
		{"keepalive-requests", "keepalive_requests", "the server closes a connection after this many requests (0: never)"},
		{"server-time", "server_time", "server work per request"},
		{"response-bytes", "response_bytes", "size of each response, headers included"},
		{"cert", "cert", "server certificate key: rsa2048 or ecdsa-p256"},
		{"tickets", "tls_resume", "TLS session tickets, so clients can resume"},
		{"dns", "dns", "the DNS server answers after this long"},
	}
	vals := map[string]*string{}
	for _, k := range keys {
		d, _ := def.Get(k.key)
		vals[k.key] = fs.String(k.flag, d, k.help)
	}
	var sets multiFlag
	fs.Var(&sets, "set", "set any scenario `key=value` (repeatable; sim params lists the keys)")
	listen := fs.String("listen", "127.0.0.1:0", "address of the upstream (loopback only; port 0: the kernel picks)")
	dnsListen := fs.String("dns-listen", "127.0.0.1:0", "address of the DNS server (loopback only)")
	caFile := fs.String("ca-file", "", "write the CA certificate here (default: a new file in the temp directory, removed at exit)")
	pos, err := parse(c, env, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageError{"takes no arguments"}
	}
	s := sim.Default()
	for _, k := range keys {
		if err := s.Set(k.key, *vals[k.key]); err != nil {
			return usageError{"--" + k.flag + ": " + err.Error()}
		}
	}
	for _, kv := range sets {
		st, err := lab.ParseSetting(kv)
		if err != nil {
			return err
		}
		if err := s.Set(st.Key, st.Value); err != nil {
			return err
		}
	}
	for _, a := range []string{*listen, *dnsListen} {
		if err := loopback.Check(a); err != nil {
			return usageError{err.Error()}
		}
	}
	srv, err := harness.StartServers(*listen, *dnsListen, s)
	if err != nil {
		return err
	}
	defer srv.Close()
	path := *caFile
	if path == "" {
		dir, err := os.MkdirTemp("", "connlab-upstream-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "ca.pem")
	}
	if err := os.WriteFile(path, srv.CAPEM, 0o644); err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(srv.Upstream.Addr())
	_, dnsPort, _ := net.SplitHostPort(srv.DNSAddr)
	scheme := "https"
	if s.TLS == sim.TLSNone {
		scheme = "http"
	}
	url := fmt.Sprintf("%s://%s:%s/", scheme, harness.APIHost, port)
	w := env.Stdout
	fmt.Fprintf(w, "upstream  %s   (%s)\n", url, srv.Upstream)
	fmt.Fprintf(w, "          rtt %s (the TCP handshake's round trip is charged on the first bytes), server_time %s, response %d B,\n",
		sim.FormatDuration(s.RTT), sim.FormatDuration(s.ServerTime), s.ResponseBytes)
	fmt.Fprintf(w, "          keepalive_timeout %s, keepalive_requests %d\n", sim.FormatDuration(s.KeepaliveTimeout), s.KeepaliveRequests)
	if s.TLS != sim.TLSNone {
		fmt.Fprintf(w, "CA        %s\n", path)
	}
	fmt.Fprintf(w, "DNS       %s answers *.connlab.test with 127.0.0.1 after %s   (dig @127.0.0.1 -p %s %s)\n", srv.DNSAddr, sim.FormatDuration(s.DNS), dnsPort, harness.APIHost)
	cacert := ""
	if s.TLS != sim.TLSNone {
		cacert = "--cacert " + lab.ShellQuote(path) + " "
	}
	fmt.Fprintf(w, "\ntry it (two requests on one connection):\n  curl %s--resolve %s:%s:127.0.0.1 -s -o /dev/null -o /dev/null -w '%s' %s %s\n",
		cacert, harness.APIHost, port, curlFormat(), url, url)
	ca := ""
	if s.TLS != sim.TLSNone {
		ca = path
	}
	fmt.Fprintf(w, "\nor with PHP (two calls on one curl handle; one line of curl's measurements each):\n  %s\n", phpCommand(url, ca, port))
	fmt.Fprintln(w, "\nserving until Ctrl-C")
	<-ctx.Done()
	acc, req := srv.Upstream.Stats()
	fmt.Fprintf(w, "stopped: %d requests on %d connections\n", req, acc)
	return nil
}

// phpCommand is a ready command that runs the PHP lab's handle.php (two
// calls on one handle) against the upstream with the php on PATH, through
// the harness's prepend that sim validate uses; outside a checkout, a
// one-line script that does the same.
func phpCommand(url, ca, port string) string {
	env := fmt.Sprintf("CONNLAB_URL=%s CONNLAB_CA=%s CONNLAB_RESOLVE=%s:%s:127.0.0.1 CONNLAB_CALLS=2", url, lab.ShellQuote(ca), harness.APIHost, port)
	if root, err := phpwasm.Root(); err == nil {
		rel := func(p string) string {
			if wd, err := os.Getwd(); err == nil {
				if r, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(r, "..") {
					return r
				}
			}
			return p
		}
		prepend := rel(filepath.Join(root, "sim", "phpwasm", "connlab.php"))
		script := rel(filepath.Join(root, "labs", "php-persistent-share", "handle.php"))
		return fmt.Sprintf("%s php -d auto_prepend_file=%s %s", env, lab.ShellQuote(prepend), lab.ShellQuote(script))
	}
	code := fmt.Sprintf(`$ch = curl_init(%q); curl_setopt_array($ch, [CURLOPT_RETURNTRANSFER => true, CURLOPT_CAINFO => %q, CURLOPT_RESOLVE => ["%s:%s:127.0.0.1"]]); `+
		`for ($i = 0; $i < 2; $i++) { curl_exec($ch); printf("num_connects %%d total %%.6f\n", curl_getinfo($ch, CURLINFO_NUM_CONNECTS), curl_getinfo($ch, CURLINFO_TOTAL_TIME)); }`,
		url, ca, harness.APIHost, port)
	return "php -r " + lab.ShellQuote(code)
}

// curlFormat is curl's -w format printing each of the model's curl phases
// (sim.CurlPhases) and num_connects.
func curlFormat() string {
	var b strings.Builder
	for _, p := range sim.CurlPhases() {
		fmt.Fprintf(&b, "%s %%{%s} ", p.Key, p.Curl)
	}
	return b.String() + `num_connects %{num_connects}\n`
}
