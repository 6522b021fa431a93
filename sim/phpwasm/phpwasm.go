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
// object (Config) and "warm" (the harness's Certs: warm up and measure a
// TLS handshake before ready); the ready line adds "versions" (Versions),
// "handshake_cpu" (ns, 0 without warm), "curl_timers" (the DNS cache
// timeout and maximum idle age curl was given, whole seconds) and, for a
// native PHP, "child" ({pid, dir} of its php -S); "done" adds "cpu_us";
// identity.php's checks arrive as {"php": {"req", "check", "result" |
// "error", "notices"}}. Call events are written when the request ends
// (PHP's output is read then), open and close events as they happen.
package phpwasm

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"

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
}

// FindNative returns a PHP CLI with the curl extension, for the "before
// 8.5" row, or an error saying what is missing.
func FindNative() (string, string, error) {
	p, err := exec.LookPath("php")
	if err != nil {
		return "", "", errors.New("phpwasm: no php on PATH (apt-get install php-cli php-curl)")
	}
	out, err := exec.Command(p, "-r", `echo function_exists("curl_init") ? PHP_VERSION : "no curl";`).Output()
	if err != nil || string(out) == "no curl" {
		return "", "", fmt.Errorf("phpwasm: %s has no curl extension (apt-get install php-curl)", p)
	}
	return p, string(out), nil
}

// Versions is what the driver reports in its ready line.
type Versions struct {
	PHP       string `json:"php"`
	Curl      string `json:"curl"`
	SSL       string `json:"ssl"`
	Runtime   string `json:"runtime"`
	SelectFix bool   `json:"select_fix"`
	FastYield bool   `json:"fast_yield"`
}

// Find returns the driver under root (the repository) and the node
// executable, or an error that says what is missing and how to get it.
func Find(root string) (driver, node string, err error) {
	dir := filepath.Join(root, Dir)
	driver = filepath.Join(dir, "driver.mjs")
	if _, err := os.Stat(driver); err != nil {
		return "", "", fmt.Errorf("phpwasm: no driver at %s", driver)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", errors.New("phpwasm: node is not installed (apt-get install nodejs npm), so real PHP 8.5 cannot run")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@php-wasm", "node-8-5")); err != nil {
		return "", "", fmt.Errorf("phpwasm: PHP 8.5 is not installed in %s/node_modules (run make php)", Dir)
	}
	return driver, node, nil
}

// ScriptFor names the lab script, in dir (labs/php-persistent-share), that
// serves the requests of a variant: one handle reused ("handle"), a share
// handle that lives for the request (reuse = request), or the persistent
// handle (reuse = process), with the block's own share sets when it has
// any other than the default.
func ScriptFor(dir, variant string, s *sim.Scenario) (string, error) {
	name := ""
	switch {
	case variant == "handle":
		name = "handle.php"
	case s.Reuse == "request":
		name = "share.php"
	case s.Reuse == "process" && reflect.DeepEqual(s.ShareSets, sim.Default().ShareSets):
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
