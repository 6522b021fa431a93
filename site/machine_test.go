package site

// The "check it on your machine" boxes ({{< machine >}}): every lab has one
// in each language, and every command a box shows runs here, with the
// output the box says to expect.
//
//   - `go run ./sim/cmd/sim upstream …` starts in the background (the sim
//     command in this process), on a free port instead of the box's;
//   - `curl …` then runs against it;
//   - `ss …`, `sysctl …` and `grep … /var/log/nginx/error.log` run in
//     private network namespaces: sysctl in a fresh one (the kernel's
//     defaults, as on a host nobody tuned), ss and grep in one where real
//     nginx has just run out of local ports to its upstream (a port range
//     of four, tcp_tw_reuse off), so the log line the box quotes is the
//     line nginx wrote;
//   - `php -S …` (with the harness's prepend) starts in the background on
//     a free port, and the box's `curl` to it runs (TestMachinePHP): with
//     PHP 8.5 as the box shows it; with an older PHP as far as it goes
//     (the server, the prepend, the same curl against handle.php), and the
//     rest is skipped, naming the PHP it needs;
//   - `redis-server …` starts in the background on a free port, and the
//     box's `redis-cli` and `ss` commands run against it on this machine's
//     loopback, in order (TestMachineRedis);
//   - `sim validate` and `make serve` are not run (a real run of every
//     block, the whole site): TestCommandsExist checks they exist.
//
// A server a box starts (sim upstream, php -S, redis-server) is stopped
// when its test ends, passed or failed; php -S and redis-server run in a
// process group of their own that dies with the test process (Ctrl-C).
//
// A ```text block after a ```sh block is what the block's last command
// prints: "…" stands for anything on that line, and runs of spaces and tabs
// compare equal.

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/connlab/connlab/internal/testutil"
	"github.com/connlab/connlab/sim/cli"
)

// A boxCommand is one command of a box, as a reader would paste it.
type boxCommand struct {
	text   string // continuation lines joined
	expect string // the ```text block after its block, if it is the block's last command
	line   int
}

type machineBox struct {
	page     *page
	line     int
	commands []boxCommand
}

var machineRE = regexp.MustCompile(`(?s)\{\{<\s*machine\s*>\}\}(.*?)\{\{<\s*/machine\s*>\}\}`)

// machineBoxes reads a page's boxes.
func machineBoxes(p *page) []machineBox {
	var out []machineBox
	for _, m := range machineRE.FindAllStringSubmatchIndex(p.body, -1) {
		inner := p.body[m[2]:m[3]]
		first := p.bodyLine + strings.Count(p.body[:m[2]], "\n")
		box := machineBox{page: p, line: p.bodyLine + strings.Count(p.body[:m[0]], "\n")}
		lines := strings.Split(inner, "\n")
		for i := 0; i < len(lines); i++ {
			l := strings.TrimSpace(lines[i])
			if !strings.HasPrefix(l, "```") {
				continue
			}
			lang := strings.TrimPrefix(l, "```")
			var body []string
			start := i
			for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
				body = append(body, lines[i])
			}
			switch lang {
			case "sh":
				cur := ""
				for j, b := range body {
					cur += strings.TrimSpace(strings.TrimSuffix(b, "\\"))
					if strings.HasSuffix(b, "\\") {
						cur += " "
						continue
					}
					if cur != "" && !strings.HasPrefix(cur, "#") {
						box.commands = append(box.commands, boxCommand{text: cur, line: first + start + 1 + j})
					}
					cur = ""
				}
			case "text":
				if n := len(box.commands); n > 0 {
					box.commands[n-1].expect = strings.Join(body, "\n")
				}
			}
		}
		out = append(out, box)
	}
	return out
}

// matchOutput compares a command's output with what the box expects.
func matchOutput(expect, got string) bool {
	var pat strings.Builder
	pat.WriteString(`(?s)^\s*`)
	for i, l := range strings.Split(strings.TrimSpace(expect), "\n") {
		if i > 0 {
			pat.WriteString(`\s*\n\s*`)
		}
		for j, part := range strings.Split(strings.TrimSpace(l), "…") {
			if j > 0 {
				pat.WriteString(`[^\n]*?`)
			}
			for k, w := range strings.Fields(part) {
				if k > 0 {
					pat.WriteString(`[ \t]+`)
				}
				pat.WriteString(regexp.QuoteMeta(w))
			}
			if strings.HasSuffix(part, " ") && j < strings.Count(l, "…") {
				pat.WriteString(`[ \t]*`)
			}
		}
	}
	pat.WriteString(`\s*$`)
	return regexp.MustCompile(pat.String()).MatchString(got)
}

func TestMatchOutput(t *testing.T) {
	for _, c := range []struct {
		expect, got string
		ok          bool
	}{
		{"1 …\n0 …", "1 0.093\n0 0.014\n", true},
		{"1 …\n0 …", "1 0.093\n1 0.014\n", false},
		{"net.ipv4.tcp_tw_reuse = 2", "net.ipv4.tcp_tw_reuse = 2\n", true},
		{"a = 32768 60999", "a = 32768\t60999\n", true},
		{"… [crit] … connect() to 127.0.0.1:5000 failed (99: …) while …", "2026/12/01 [crit] 1#1: *1 connect() to 127.0.0.1:5000 failed (99: Cannot assign) while x\n", true},
		{"… [crit] … connect() failed (99: …)", "2026/12/01 [crit] 1#1: *1 connect() to 127.0.0.1:5000 failed (99: x)\n", false},
	} {
		if got := matchOutput(c.expect, c.got); got != c.ok {
			t.Errorf("matchOutput(%q, %q) = %v", c.expect, c.got, got)
		}
	}
}

// boxKind says how the test runs a command, or why it does not.
func boxKind(cmd string) string {
	switch {
	case strings.HasPrefix(cmd, "go run ./sim/cmd/sim upstream "):
		return "upstream"
	case strings.HasPrefix(cmd, "go run ./sim/cmd/sim validate "), cmd == "make serve":
		return "not run"
	case phpServerRE.MatchString(cmd):
		return "php -S"
	case strings.HasPrefix(cmd, "curl ") && strings.Contains(cmd, "http://127.0.0.1:8080/"):
		return "php curl"
	case strings.HasPrefix(cmd, "redis-server "):
		return "redis-server"
	case strings.HasPrefix(cmd, "redis-cli ") || strings.HasPrefix(cmd, "for ") && strings.Contains(cmd, "redis-cli "):
		return "redis-cli"
	case strings.HasPrefix(cmd, "curl "):
		return "curl"
	case strings.HasPrefix(cmd, "sysctl "):
		return "defaults"
	case strings.HasPrefix(cmd, "ss "), strings.HasPrefix(cmd, "grep ") && strings.Contains(cmd, "/var/log/nginx/error.log"):
		return "exhausted"
	}
	return ""
}

// phpServerRE is php's built-in server on the boxes' port 8080, after
// any environment it is given (NAME=value …).
var phpServerRE = regexp.MustCompile(`^(?:[A-Z_][A-Z0-9_]*=\S*\s+)*php\s.*\s-S\s+127\.0\.0\.1:8080(\s|$)`)

// starts says whether a box starts a server of a kind (boxKind).
func (b machineBox) starts(kind string) bool {
	for _, c := range b.commands {
		if boxKind(c.text) == kind {
			return true
		}
	}
	return false
}

// Every lab has one box in each language, and the two languages show the
// same commands.
func TestMachineBoxes(t *testing.T) {
	all := pages(t)
	for _, name := range sortedNames(all) {
		var cmds [2][]string
		for i, lang := range []string{"en", "ko"} {
			p := all[name][lang]
			if p == nil {
				continue
			}
			boxes := machineBoxes(p)
			if strings.HasPrefix(p.path, "../labs/") && len(boxes) != 1 {
				t.Errorf("%s: %d \"check it on your machine\" boxes ({{< machine >}}), want one a lab", p.path, len(boxes))
			}
			for _, b := range boxes {
				if len(b.commands) == 0 {
					t.Errorf("%s:%d: a box without commands", p.path, b.line)
				}
				for _, c := range b.commands {
					cmds[i] = append(cmds[i], c.text)
					if boxKind(c.text) == "" {
						t.Errorf("%s:%d: the box shows %q, which the test cannot run: use one it runs (sim upstream, curl, php -S, redis-server, redis-cli, ss, sysctl, grep of nginx's error log) or teach it to run this one", p.path, c.line, c.text)
					}
				}
			}
		}
		if strings.Join(cmds[0], "\n") != strings.Join(cmds[1], "\n") {
			t.Errorf("%s: the boxes show other commands in English and Korean:\n%s\n---\n%s", name, strings.Join(cmds[0], "\n"), strings.Join(cmds[1], "\n"))
		}
	}
}

// freePort is a loopback port nobody listens on now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	return port
}

// runBoxUpstream starts a box's sim upstream in this process, on port, with
// its CA file in dir, and stops it at cleanup (checking that it stops).
func runBoxUpstream(t *testing.T, cmd, port, dir string) {
	t.Helper()
	args := strings.Fields(strings.TrimPrefix(cmd, "go run ./sim/cmd/sim "))
	ctx, cancel := context.WithCancel(context.Background())
	out := &testutil.SyncBuffer{}
	done := make(chan int, 1)
	go func() { done <- cli.Run(ctx, &cli.Env{Stdout: out, Stderr: out}, args) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Errorf("sim upstream did not stop within 10 s of its context")
		}
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second); err == nil {
			c.Close()
			t.Errorf("something still listens on 127.0.0.1:%s after sim upstream stopped", port)
		}
	})
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(out.String(), "serving until Ctrl-C"); {
		select {
		case code := <-done:
			t.Fatalf("%s exited (%d): %s", cmd, code, out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not serving after 20 s: %s", cmd, out)
		}
	}
}

// localize puts a box's command on this test's port and files.
func localize(cmd, port, dir string) string {
	cmd = strings.ReplaceAll(cmd, ":8443", ":"+port)
	cmd = regexp.MustCompile(`(^|\s)ca\.pem(\s|$)`).ReplaceAllString(cmd, "${1}"+filepath.Join(dir, "ca.pem")+"${2}")
	cmd = strings.ReplaceAll(cmd, "/var/log/nginx/error.log", filepath.Join(dir, "logs", "error.log"))
	return cmd
}

// The boxes' sim upstream and curl commands, in every language: curl
// exits 0 and prints what the box says.
func TestMachineCurl(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl on PATH")
	}
	all := pages(t)
	ran := 0
	for _, name := range sortedNames(all) {
		for _, lang := range []string{"en", "ko"} {
			p := all[name][lang]
			if p == nil {
				continue
			}
			for _, b := range machineBoxes(p) {
				t.Run(fmt.Sprintf("%s:%d", filepath.Base(p.path), b.line), func(t *testing.T) {
					dir, port := t.TempDir(), freePort(t)
					started := false
					for _, c := range b.commands {
						switch boxKind(c.text) {
						case "upstream":
							runBoxUpstream(t, localize(c.text, port, dir), port, dir)
							started = true
						case "curl":
							if !started {
								t.Fatalf("%s:%d: curl before the box starts its sim upstream", p.path, c.line)
							}
							ran++
							ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
							cmd := exec.CommandContext(ctx, "sh", "-c", localize(c.text, port, dir))
							cmd.Dir = dir
							out, err := cmd.CombinedOutput()
							cancel()
							if err != nil {
								t.Errorf("%s:%d: %s: %v\n%s", p.path, c.line, c.text, err, out)
								continue
							}
							if c.expect != "" && !matchOutput(c.expect, string(out)) {
								t.Errorf("%s:%d: %s printed\n%s\nthe box says\n%s", p.path, c.line, c.text, out, c.expect)
							}
						}
					}
				})
			}
		}
	}
	if ran == 0 {
		t.Error("no box shows a curl command")
	}
}

var (
	unshareOnce sync.Once
	unshareErr  error
)

// privateNet says whether this machine lets the test make a private
// network namespace (root, or user namespaces).
func privateNet(t *testing.T) []string {
	t.Helper()
	args := []string{"-n"}
	if os.Geteuid() != 0 {
		args = []string{"-r", "-n"}
	}
	unshareOnce.Do(func() {
		if out, err := exec.Command("unshare", append(args, "true")...).CombinedOutput(); err != nil {
			unshareErr = fmt.Errorf("unshare %s true: %v %s", strings.Join(args, " "), err, out)
		}
	})
	if unshareErr != nil {
		t.Skipf("no private network namespace here (%v): the boxes' ss, sysctl and grep commands are not run", unshareErr)
	}
	return args
}

// inNamespace runs a shell script in a private network namespace with lo
// up, in its own process group (killed at the end, whatever the script
// left running).
func inNamespace(t *testing.T, dir, script string) {
	t.Helper()
	path := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(path, []byte("ip link set lo up\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", append(privateNet(t), "sh", path)...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // nothing of the run outlives it
	if err != nil {
		t.Fatalf("the namespace's script failed: %v\n%s\n%s", err, script, out)
	}
	if left := processesWith(dir); len(left) > 0 {
		t.Errorf("processes of the run still there: %v", left)
	}
}

// exhaustNginx is the script that makes nginx run out of local ports: an
// upstream on 127.0.0.1:5000 (nginx itself), a proxy on 8080 that speaks
// HTTP/1.1 to it without keeping connections (so nginx closes first and
// keeps the TIME_WAIT), four local ports, tcp_tw_reuse off, and one client
// connection carrying six requests.
const exhaustNginx = `sysctl -qw net.ipv4.ip_local_port_range="40000 40003"
sysctl -qw net.ipv4.tcp_tw_reuse=0
nginx -c "$PWD/nginx.conf" -p "$PWD" &
ngx=$!
for i in $(seq 50); do curl -s -o /dev/null http://127.0.0.1:8080/ready && break; sleep 0.1; done
curl -s $(for i in 1 2 3 4 5 6; do printf -- '-o /dev/null '; done) -w '%{http_code}\n' 'http://127.0.0.1:8080/[1-6]' > curl.out
kill $ngx; wait $ngx
`

const exhaustNginxConf = `daemon off;
worker_processes 1;
error_log %[1]s/logs/error.log;
pid %[1]s/nginx.pid;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path %[1]s/tmp; proxy_temp_path %[1]s/tmp; fastcgi_temp_path %[1]s/tmp;
  uwsgi_temp_path %[1]s/tmp; scgi_temp_path %[1]s/tmp;
  server { listen 127.0.0.1:5000; location / { return 200 "ok\n"; } }
  server { listen 127.0.0.1:8080;
    location = /ready { return 200; }
    location / { proxy_pass http://127.0.0.1:5000; proxy_http_version 1.1; proxy_set_header Connection ""; }
  }
}
`

// The boxes' ss, sysctl and grep commands, in every language: run where
// they show something (see the file's comment), they exit 0 and print what
// the box says; a count (… | wc -l) prints a number.
func TestMachineHost(t *testing.T) {
	privateNet(t)
	all := pages(t)
	type job struct {
		p    *page
		c    boxCommand
		kind string
	}
	var jobs []job
	for _, name := range sortedNames(all) {
		for _, lang := range []string{"en", "ko"} {
			if p := all[name][lang]; p != nil {
				for _, b := range machineBoxes(p) {
					if b.starts("redis-server") {
						continue // its ss commands count what its redis-cli left: TestMachineRedis
					}
					for _, c := range b.commands {
						if k := boxKind(c.text); k == "defaults" || k == "exhausted" {
							jobs = append(jobs, job{p, c, k})
						}
					}
				}
			}
		}
	}
	if len(jobs) == 0 {
		t.Fatal("no box shows an ss, sysctl or grep command")
	}
	_, nginxErr := exec.LookPath("nginx")
	for _, kind := range []string{"defaults", "exhausted"} {
		dir := t.TempDir()
		script := ""
		if kind == "exhausted" {
			if nginxErr != nil {
				t.Logf("no nginx on PATH: the boxes' ss and grep commands are not run (CI installs nginx-light)")
				continue
			}
			for _, d := range []string{"logs", "tmp"} {
				if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(fmt.Sprintf(exhaustNginxConf, dir)), 0o644); err != nil {
				t.Fatal(err)
			}
			script = exhaustNginx
		}
		n := 0
		for i, j := range jobs {
			if j.kind == kind {
				n++
				script += fmt.Sprintf("%s > out.%d 2>&1; echo $? > rc.%d\n", localize(j.c.text, "8443", dir), i, i)
			}
		}
		if n == 0 {
			continue
		}
		inNamespace(t, dir, script)
		if kind == "exhausted" {
			codes, _ := os.ReadFile(filepath.Join(dir, "curl.out"))
			if !bytes.Contains(codes, []byte("200")) || !bytes.Contains(codes, []byte("502")) {
				t.Errorf("nginx with four local ports and six requests answered %q: want some 200 and then 502", codes)
			}
		}
		for i, j := range jobs {
			if j.kind != kind {
				continue
			}
			out, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("out.%d", i)))
			rc, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rc.%d", i)))
			if strings.TrimSpace(string(rc)) != "0" {
				t.Errorf("%s:%d: %s: exit %s\n%s", j.p.path, j.c.line, j.c.text, strings.TrimSpace(string(rc)), out)
				continue
			}
			switch {
			case j.c.expect != "":
				if !matchOutput(j.c.expect, string(out)) {
					t.Errorf("%s:%d: %s printed\n%s\nthe box says\n%s", j.p.path, j.c.line, j.c.text, out, j.c.expect)
				}
			case strings.HasSuffix(j.c.text, "| wc -l"):
				if _, err := strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
					t.Errorf("%s:%d: %s printed %q, not a count", j.p.path, j.c.line, j.c.text, out)
				}
			case len(bytes.TrimSpace(out)) == 0:
				t.Errorf("%s:%d: %s printed nothing", j.p.path, j.c.line, j.c.text)
			}
		}
	}
}

// A tcpSocket is a TCP socket as /proc/net/tcp has it: local port, remote
// port and state (0A is LISTEN, 01 ESTABLISHED, 06 TIME_WAIT).
type tcpSocket struct {
	local, remote int
	state         string
}

// tcpSockets lists this network namespace's TCP sockets, IPv4 and IPv6.
// Reading them opens no connection, so a count of TIME_WAIT sockets
// afterwards is not disturbed.
func tcpSockets() (out []tcpSocket) {
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n")[1:] {
			fs := strings.Fields(l)
			if len(fs) < 4 {
				continue
			}
			port := func(addr string) int {
				i := strings.LastIndexByte(addr, ':')
				n, _ := strconv.ParseUint(addr[i+1:], 16, 16)
				return int(n)
			}
			out = append(out, tcpSocket{port(fs[1]), port(fs[2]), fs[3]})
		}
	}
	return out
}

// listening says whether a socket listens on port.
func listening(port string) bool {
	p, _ := strconv.Atoi(port)
	for _, s := range tcpSockets() {
		if s.state == "0A" && s.local == p {
			return true
		}
	}
	return false
}

// closing lists the sockets towards port that are neither open nor in
// TIME_WAIT yet: a client that has just closed, whose server has not
// closed its side (a reader's next command comes seconds later; a test's
// comes at once).
func closing(port string) []string {
	p, _ := strconv.Atoi(port)
	var out []string
	for _, s := range tcpSockets() {
		if s.remote == p && s.state != "01" && s.state != "06" {
			out = append(out, s.state)
		}
	}
	return out
}

var envPrefixRE = regexp.MustCompile(`^((?:[A-Z_][A-Z0-9_]*=\S*\s+)*)`)

// startBoxServer starts a server that a box runs in a terminal of its own
// (php -S, redis-server) with sh in dir, the shell replaced by the server
// (exec), in a process group of its own that dies with the test process
// (Ctrl-C). It returns once the server listens on 127.0.0.1:port; at
// cleanup it stops the group and checks that nothing listens there.
func startBoxServer(t *testing.T, name, script, dir, port string) *testutil.SyncBuffer {
	t.Helper()
	out := &testutil.SyncBuffer{}
	cmd := exec.Command("sh", "-c", envPrefixRE.ReplaceAllString(script, "${1}exec "))
	cmd.Dir = dir
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "PHP_CLI_SERVER_WORKERS=") { // one php -S process: one worker
			cmd.Env = append(cmd.Env, e)
		}
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Errorf("%s did not stop within 10 s of SIGTERM", name)
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // and whatever it left in its group
		<-exited
		for deadline := time.Now().Add(5 * time.Second); listening(port); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("something still listens on 127.0.0.1:%s after %s stopped", port, name)
				break
			}
		}
	})
	for deadline := time.Now().Add(30 * time.Second); !listening(port); {
		select {
		case <-exited:
			t.Fatalf("%s exited (%v) before it listened on 127.0.0.1:%s:\n%s", script, waitErr, port, out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not listening on 127.0.0.1:%s after 30 s:\n%s", script, port, out)
		}
	}
	return out
}

// runBoxCommand runs one of a box's commands with sh in dir and checks
// that it exits 0 and prints what the box says (a count, … | wc -l, at
// least prints a number). It returns what the command printed.
func runBoxCommand(t *testing.T, p *page, c boxCommand, script, dir, expect string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	switch {
	case err != nil:
		t.Errorf("%s:%d: %s: %v\n%s", p.path, c.line, script, err, out)
	case expect != "":
		if !matchOutput(expect, string(out)) {
			t.Errorf("%s:%d: %s printed\n%s\nthe box says\n%s", p.path, c.line, script, out, expect)
		}
	case strings.HasSuffix(c.text, "| wc -l"):
		if _, err := strconv.Atoi(strings.TrimSpace(string(out))); err != nil {
			t.Errorf("%s:%d: %s printed %q, not a count", p.path, c.line, script, out)
		}
	}
	return string(out)
}

// boxesStarting lists every page's boxes that start a server of a kind.
func boxesStarting(t *testing.T, kind string) (out []machineBox) {
	all := pages(t)
	for _, name := range sortedNames(all) {
		for _, lang := range []string{"en", "ko"} {
			if p := all[name][lang]; p != nil {
				for _, b := range machineBoxes(p) {
					if b.starts(kind) {
						out = append(out, b)
					}
				}
			}
		}
	}
	if len(out) == 0 {
		t.Fatalf("no box starts %s", kind)
	}
	return out
}

// The boxes that serve a lab's script with php -S: their sim upstream,
// php -S (from the checkout's root, as a reader runs it) and curl
// commands. The box's curl to a script that needs PHP 8.5 runs as the box
// shows it only on PHP 8.5; before, the test checks what it can and skips
// the rest, saying so.
func TestMachinePHP(t *testing.T) {
	boxes := boxesStarting(t, "php -S")
	if _, err := exec.LookPath("php"); err != nil {
		t.Skip("no php on PATH: the boxes' php -S is not run (Debian: php-cli and php-curl; the box needs PHP 8.5)")
	}
	if exec.Command("php", "-r", `exit(function_exists("curl_init") ? 0 : 1);`).Run() != nil {
		t.Skip("the php on PATH has no curl extension: the boxes' php -S is not run (Debian: php-curl)")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl on PATH")
	}
	version, _ := exec.Command("php", "-r", "echo PHP_VERSION;").Output()
	has85 := exec.Command("php", "-r", "exit(PHP_VERSION_ID >= 80500 ? 0 : 1);").Run() == nil
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range boxes {
		p := b.page
		t.Run(fmt.Sprintf("%s:%d", filepath.Base(p.path), b.line), func(t *testing.T) {
			dir, upPort, phpPort := t.TempDir(), freePort(t), freePort(t)
			local := func(s string) string {
				s = strings.ReplaceAll(s, "$PWD/ca.pem", filepath.Join(dir, "ca.pem"))
				return strings.ReplaceAll(localize(s, upPort, dir), "127.0.0.1:8080", "127.0.0.1:"+phpPort)
			}
			var server *testutil.SyncBuffer
			var needs85 []string
			for _, c := range b.commands {
				switch boxKind(c.text) {
				case "upstream":
					runBoxUpstream(t, localize(c.text, upPort, dir), upPort, dir)
				case "php -S":
					server = startBoxServer(t, "php -S", local(c.text), root, phpPort)
				case "php curl":
					if server == nil {
						t.Fatalf("%s:%d: curl before the box starts php -S", p.path, c.line)
					}
					if has85 {
						runBoxCommand(t, p, c, local(c.text), dir, c.expect)
						continue
					}
					// Before PHP 8.5: the box's own command reaches the
					// script, which stops at the missing function ...
					needs85 = append(needs85, c.text)
					out := runBoxCommand(t, p, c, local(c.text), dir, "")
					if strings.Contains(c.text, "persistent.php") && !strings.Contains(out, "curl_share_init_persistent") {
						t.Errorf("%s:%d: on PHP %s, %s printed\n%s\nwant PHP's error for the missing curl_share_init_persistent()", p.path, c.line, version, c.text, out)
					}
					// ... and the same call to handle.php, which PHP 8.2
					// runs, gets the box's lines, each request connecting.
					if strings.Contains(c.text, "persistent.php") && c.expect != "" {
						runBoxCommand(t, p, c, local(strings.ReplaceAll(c.text, "persistent.php", "handle.php")), dir,
							strings.ReplaceAll(c.expect, `"num_connects":0`, `"num_connects":1`))
					}
				}
			}
			if t.Failed() {
				t.Logf("php -S printed:\n%s", server)
			}
			if len(needs85) > 0 {
				t.Skipf("PHP %s on PATH, not 8.5 (php -r 'exit(PHP_VERSION_ID >= 80500 ? 0 : 1);' fails): %q needs curl_share_init_persistent(), so its output was not compared with the box. "+
					"Checked: sim upstream, php -S with the prepend, that command reaching the script, and the same call to handle.php. Install PHP 8.5's CLI with its curl extension (php8.5-cli, php8.5-curl) to run it all",
					version, needs85)
			}
		})
	}
}

// The boxes that start redis-server: it runs on a free loopback port, and
// the box's redis-cli and ss commands run in order against it on this
// machine, printing what the box says. Before each ss, the test waits for
// the connections redis-cli closed to reach TIME_WAIT, as a reader's
// next command does.
func TestMachineRedis(t *testing.T) {
	boxes := boxesStarting(t, "redis-server")
	for bin, pkg := range map[string]string{"redis-server": "redis-server", "redis-cli": "redis-tools", "ss": "iproute2"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("no %s on PATH: the boxes' redis-server, redis-cli and ss are not run (Debian: %s; CI installs redis-server, which brings redis-tools)", bin, pkg)
		}
	}
	for _, b := range boxes {
		p := b.page
		t.Run(fmt.Sprintf("%s:%d", filepath.Base(p.path), b.line), func(t *testing.T) {
			dir, port := t.TempDir(), freePort(t)
			local := func(s string) string { return strings.ReplaceAll(s, "6379", port) }
			var server *testutil.SyncBuffer
			for _, c := range b.commands {
				switch kind := boxKind(c.text); kind {
				case "redis-server":
					server = startBoxServer(t, "redis-server", local(c.text), dir, port)
				case "redis-cli", "exhausted":
					if server == nil {
						t.Fatalf("%s:%d: %s before the box starts redis-server", p.path, c.line, c.text)
					}
					if kind == "exhausted" {
						for deadline := time.Now().Add(10 * time.Second); len(closing(port)) > 0 && time.Now().Before(deadline); {
							time.Sleep(20 * time.Millisecond)
						}
					}
					runBoxCommand(t, p, c, local(c.text), dir, c.expect)
				default:
					t.Errorf("%s:%d: %s: the test runs only redis-server, redis-cli and ss in a box that starts redis-server", p.path, c.line, c.text)
				}
			}
			if t.Failed() {
				t.Logf("redis-server printed:\n%s", server)
			}
		})
	}
}
