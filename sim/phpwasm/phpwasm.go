// Package phpwasm runs the PHP lab's own scripts on real PHP 8.5: PHP
// compiled to WebAssembly for Node.js (npm's @php-wasm packages, GPL), one
// runtime per worker process. The worker process is node/driver.mjs, a
// separate program the harness starts; it speaks the harness's worker line
// protocol (a config line, then jobs; ready, events, done) and runs one
// lab script per job as one PHP request.
//
// This package finds the driver and Node, says which lab script runs a
// variant, and holds the config the driver reads besides the worker's.
//
// The driver's lines beyond the Go worker's: the config line's "php"
// object (Config) and "warm" (the harness's Certs: warm up, and measure
// what the client costs besides the network, before ready); the ready line
// carries "info" (Info); a job {"measure": true} measures those costs again
// and is answered with an info line; "done" adds "cpu_us" (the process's
// CPU for the request); a script that probes PHP (identity.php) has each
// of its statements arrive as {"check": Check}. Call events are written
// when the request ends (PHP's output is read then), open and close events
// as they happen. CONNLAB_DRIVER_DEBUG=FILE makes the driver append what it
// does (jobs, closes, the sockets left at exit) to FILE.
package phpwasm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"github.com/connlab/connlab/sim"
)

// Dir is the driver's folder, relative to the repository's root.
const Dir = "sim/phpwasm/node"

// Config is the "php" object of a worker's config line.
type Config struct {
	// Script is the lab's PHP script (absolute path) that one job runs.
	Script string `json:"script"`
	// Prepend is the harness's side of a script (inputs, report());
	// default: connlab.php beside the driver's folder.
	Prepend string `json:"prepend,omitempty"`
	// StockSelect keeps php-wasm's select(), which polls a read set for
	// POLLIN|POLLOUT: every open socket looks readable and libcurl drops
	// idle connections as dead. For showing that; never for a lab run.
	StockSelect bool `json:"stock_select,omitempty"`
	// TimerClamp keeps Node's 1 ms minimum for the setTimeout(0) with which
	// php-wasm's select() yields before each wait (the driver yields with
	// setImmediate). For showing that; never for a lab run.
	TimerClamp bool `json:"timer_clamp,omitempty"`
	// Host is the API's host name (default api.connlab.test).
	Host string `json:"host,omitempty"`
	// Binary, when set, is a PHP CLI (Debian's /usr/bin/php, PHP 8.2) that
	// runs the script instead of PHP 8.5 in WebAssembly: the worker is one
	// `php -S` process and each job one HTTP request to it. Its libcurl is
	// given the API's address (CURLOPT_RESOLVE): no lookup is made.
	Binary string `json:"binary,omitempty"`
	// WarmUpstream is a loopback server like the run's upstream but without
	// delay, which warm-up calls (and measures) instead of a private Node
	// server of the driver.
	WarmUpstream string `json:"warm_upstream,omitempty"`
	// ConnectDelay: a connection is reported connected this long after
	// connect() (the scenario's RTT: the TCP handshake, as the harness's
	// own dialer waits it); 0 for a native PHP, whose sockets are the
	// kernel's.
	ConnectDelay time.Duration `json:"connect_delay,omitempty"`
}

// FindNative returns a PHP CLI with the curl extension, for the "before
// 8.5" row, or an error saying what is missing.
func FindNative() (string, string, error) {
	p, err := exec.LookPath("php")
	if err != nil {
		return "", "", errors.New("no php on PATH (apt-get install php-cli php-curl)")
	}
	out, err := exec.Command(p, "-r", `echo function_exists("curl_init") ? PHP_VERSION : "no curl";`).Output()
	if err != nil || string(out) == "no curl" {
		return "", "", fmt.Errorf("%s has no curl extension (apt-get install php-curl)", p)
	}
	return p, string(out), nil
}

// Info is what the driver says about its runtime in its ready line.
type Info struct {
	PHP     string `json:"php"`  // PHP_VERSION
	Curl    string `json:"curl"` // libcurl's version
	SSL     string `json:"ssl"`  // its TLS library
	Runtime string `json:"runtime"`
	// Package is the npm package of the WebAssembly build and its version.
	Package string `json:"package,omitempty"`
	// PersistentShare: curl_share_init_persistent() exists.
	PersistentShare bool `json:"persistent_share"`
	SelectFix       bool `json:"select_fix"`
	FastYield       bool `json:"fast_yield"`
	// What the client costs besides the network (ns), measured by the
	// warm-up (or a measure job) on a path without delay or server work,
	// as the model's keys of the same names take it: opening a TCP
	// connection, a full TLS handshake (client and server), a resumed one
	// (TLS 1.3 with tls_resume only: libcurl resumes no TLS 1.2 session
	// with the upstream), dropping a kept connection the server closed,
	// and on a kept connection the call until the answer's first byte and
	// after it. 0 without warm-up.
	ConnectCPU    time.Duration `json:"connect_cpu"`
	HandshakeCPU  time.Duration `json:"handshake_cpu"`
	ResumeCPU     time.Duration `json:"resume_cpu"`
	DropCPU       time.Duration `json:"drop_cpu"`
	ClientCPU     time.Duration `json:"client_cpu"`
	ClientReadCPU time.Duration `json:"client_read_cpu"`
	// RequestCPU is a request's own cost besides its calls (request
	// startup and shutdown, the prepend, reading its output): the model's
	// app_time.
	RequestCPU time.Duration `json:"request_cpu"`
	// CallSpread is how much one new connection's call varies here: the
	// 90th percentile of the warm-up calls' CPU less its median.
	CallSpread time.Duration `json:"call_spread"`
	// DropPairs is how many pairs of calls DropCPU is the median of: each
	// the difference of two times of about a millisecond, so the median
	// can be at or below 0 (DropCPU is then 0: the drop within the noise).
	DropPairs int `json:"drop_pairs"`
	// CurlTimers: the DNS cache timeout and maximum idle age curl was
	// given (whole seconds; libcurl takes no less).
	CurlTimers map[string]int `json:"curl_timers,omitempty"`
	// Child is a native PHP's php -S process.
	Child *struct {
		PID int    `json:"pid"`
		Dir string `json:"dir"`
	} `json:"child,omitempty"`
}

// Name is the runtime in words: "PHP 8.5.10 (WebAssembly (Asyncify), Node
// 20.20.2; @php-wasm/node-8-5 3.1.56), libcurl 7.69.1, OpenSSL/1.1.1t".
func (i *Info) Name() string {
	rt := i.Runtime
	if i.Package != "" {
		rt += "; " + i.Package
	}
	return fmt.Sprintf("PHP %s (%s), libcurl %s, %s", i.PHP, rt, i.Curl, i.SSL)
}

// Check is one statement of a script that probes PHP (identity.php's
// check()): what it returned, or the exception it threw with PHP's own
// message, and the notices it raised.
type Check struct {
	Req     int      `json:"req"`
	ID      string   `json:"check"`
	Result  any      `json:"result,omitempty"`
	Error   string   `json:"error,omitempty"`
	Notices []string `json:"notices,omitempty"`
}

// Text is the check's outcome as one string: the error, or the result
// (a string, or its JSON).
func (c *Check) Text() string {
	if c.Error != "" {
		return c.Error
	}
	if s, ok := c.Result.(string); ok {
		return s
	}
	b, _ := json.Marshal(c.Result)
	return string(b)
}

// Find returns the driver under root (the repository) and the node
// executable, or an error that says what is missing and how to get it.
func Find(root string) (driver, node string, err error) {
	driver, node, err = FindDriver(root)
	if err != nil {
		return "", "", err
	}
	if _, err := os.Stat(filepath.Join(root, Dir, "node_modules", "@php-wasm", "node-8-5")); err != nil {
		return "", "", fmt.Errorf("PHP 8.5 is not installed in %s/node_modules (run make php)", Dir)
	}
	return driver, node, nil
}

// FindDriver returns the driver under root and the node executable,
// without the PHP 8.5 package (a native PHP needs only these).
func FindDriver(root string) (driver, node string, err error) {
	driver = filepath.Join(root, Dir, "driver.mjs")
	if _, err := os.Stat(driver); err != nil {
		return "", "", fmt.Errorf("no PHP driver at %s", driver)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", errors.New("node is not installed (apt-get install nodejs npm)")
	}
	return driver, node, nil
}

// Root finds the repository that holds the driver: from each of dirs (a
// lab's folder, say), then from the working directory, it looks upward
// for sim/phpwasm/node/driver.mjs.
func Root(dirs ...string) (string, error) {
	if wd, err := os.Getwd(); err == nil {
		dirs = append(dirs, wd)
	}
	for _, d := range dirs {
		d, err := filepath.Abs(d)
		if err != nil {
			continue
		}
		for {
			if _, err := os.Stat(filepath.Join(d, Dir, "driver.mjs")); err == nil {
				return d, nil
			}
			up := filepath.Dir(d)
			if up == d {
				break
			}
			d = up
		}
	}
	return "", fmt.Errorf("no connlab checkout with %s/driver.mjs above %s or the working directory", Dir, strings.Join(dirs[:max(0, len(dirs)-1)], ", "))
}

// Script returns the absolute path of the script a variant runs: name in
// dir (the lab's folder) when the lab names one, else ScriptFor's choice.
// A block's share sets other than the default reach only a script that
// reads them (SHARE_OPTIONS); with another, the real run would use the
// script's own options and the model the sets, so that is an error.
func Script(dir, name, variant string, s *sim.Scenario) (string, error) {
	p := filepath.Join(dir, name)
	if name == "" {
		var err error
		if p, err = ScriptFor(dir, variant, s); err != nil {
			return "", err
		}
		name = filepath.Base(p)
	}
	src, err := os.ReadFile(p)
	if err != nil {
		return "", fmt.Errorf("variant %q: script %s: %w", variant, name, err)
	}
	if (s.Reuse == "request" || s.Reuse == "process") && !defaultShareSets(s) && !bytes.Contains(src, []byte("SHARE_OPTIONS")) {
		sets, _ := s.Get("share_sets")
		return "", fmt.Errorf("variant %q: share_sets is %s, but script %s gives the share handle its own options; only a script that reads SHARE_OPTIONS (as option-sets.php does) runs with the block's share sets", variant, sets, name)
	}
	return filepath.Abs(p)
}

func defaultShareSets(s *sim.Scenario) bool {
	return reflect.DeepEqual(s.ShareSets, sim.Default().ShareSets)
}

// ScriptFor names the lab script, in dir (labs/php-persistent-share), that
// serves the requests of a variant: one handle reused ("handle"), a share
// handle that lives for the request (reuse = request), or the persistent
// handle (reuse = process), with the block's own share sets when it has
// any other than the default (a share handle that lives for the request
// takes only the default: Script refuses others).
func ScriptFor(dir, variant string, s *sim.Scenario) (string, error) {
	name := ""
	switch {
	case variant == "handle":
		name = "handle.php"
	case s.Reuse == "request":
		name = "share.php"
	case s.Reuse == "process" && defaultShareSets(s):
		name = "persistent.php"
	case s.Reuse == "process":
		name = "option-sets.php"
	default:
		return "", fmt.Errorf("phpwasm: variant %q: no PHP script for reuse = %q", variant, s.Reuse)
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("phpwasm: variant %q: %w", variant, err)
	}
	return p, nil
}
