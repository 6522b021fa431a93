package servers

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/connlab/connlab/sim"
	"github.com/connlab/connlab/sim/harness/netem"
)

// Nginx is a real nginx as the reverse proxy of the proxy setup,
// configured in a temporary prefix: the scenario's workers, and upstream
// keep-alive or none.
type Nginx struct {
	Addr string // where it listens
	Desc string // its version and configuration, for the run's components
	dir  string
	prog *program
}

// ConnectPath is a path the reverse proxy (nginx, or the Go one) answers
// itself with 204 and leaves out of its log: the load generator requests it
// once per user before the run, so its connections are open when the run
// starts, as the model has them (it has no client connection setup).
const ConnectPath = "/connlab-connect"

// StartNginx starts nginx (the program bin) in front of upstream, its
// prefix made in dir ("": the system's temporary folder).
func StartNginx(bin string, s *sim.Scenario, upstream, dir string) (*Nginx, error) {
	port, err := netem.FreePort()
	if err != nil {
		return nil, err
	}
	dir, err = os.MkdirTemp(dir, "connlab-nginx-")
	if err != nil {
		return nil, err
	}
	os.Chmod(dir, 0o755)
	n := &Nginx{dir: dir, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	upstreamBlock := fmt.Sprintf("    upstream app {\n        server %s;\n", upstream)
	location := "            proxy_pass http://app;\n"
	if s.Reuse == sim.ReuseUpstreamKeepalive {
		// The model has the server close idle connections; nginx's own
		// upstream keepalive_timeout is left long so only the server does.
		// Likewise for keepalive_requests: the model's is the server's.
		upstreamBlock += fmt.Sprintf("        keepalive %d;\n        keepalive_timeout 1h;\n        keepalive_requests 1000000000;\n", s.UpstreamKeepalive)
		location += "            proxy_http_version 1.1;\n            proxy_set_header Connection \"\";\n"
	}
	upstreamBlock += "    }\n"
	conf := fmt.Sprintf(`# written by the connlab harness
daemon off;
master_process on;
worker_processes %d;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log warn;
events { worker_connections 4096; }
http {
    log_format connlab '$msec $pid $http_x_connlab_req $upstream_connect_time|$upstream_header_time|$upstream_response_time|$upstream_http_x_connlab_conn $status';
    access_log %[2]s/access.log connlab;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    keepalive_timeout 1h;
    keepalive_requests 1000000;
%[3]s    server {
        listen %[4]s;
        location = %[6]s {
            access_log off;
            return 204;
        }
        location / {
%[5]s            add_header X-Connlab-Pid $pid always;
        }
    }
}
`, s.Workers, dir, upstreamBlock, n.Addr, location, ConnectPath)
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	cmd := exec.Command(bin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if n.prog, err = startProgram(cmd, dir); err != nil {
		return nil, err
	}
	if err := n.prog.waitListening(n.Addr); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		n.Stop()
		return nil, fmt.Errorf("harness: nginx did not start (%v): %s%s", err, stderr.String(), log)
	}
	ver, _ := exec.Command(bin, "-v").CombinedOutput()
	mode := fmt.Sprintf("keepalive %d, proxy_http_version 1.1, Connection \"\"", s.UpstreamKeepalive)
	if s.Reuse != sim.ReuseUpstreamKeepalive {
		mode = "no upstream keep-alive (HTTP/1.0, Connection: close)"
	}
	n.Desc = fmt.Sprintf("%s on %s: worker_processes %d, %s", strings.TrimSpace(strings.TrimPrefix(string(ver), "nginx version: ")), n.Addr, s.Workers, mode)
	return n, nil
}

// Stop stops nginx and removes its prefix.
func (n *Nginx) Stop() { n.prog.stop() }

// Events turns nginx's access log into call events, timed from the run's
// start t0 (wall clock): one line per proxied request with the upstream's
// times (whole milliseconds) and the upstream's connection id and request
// number on it.
func (n *Nginx) Events(t0 time.Time, emit func(*sim.Event)) error {
	// nginx writes a line after it sends the response; wait for the last.
	time.Sleep(20 * time.Millisecond)
	f, err := os.Open(filepath.Join(n.dir, "access.log"))
	if err != nil {
		return err
	}
	defer f.Close()
	pids := map[int]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 5 {
			continue
		}
		msec, _ := strconv.ParseFloat(f[0], 64)
		pid, _ := strconv.Atoi(f[1])
		req, _ := strconv.Atoi(f[2])
		parts := strings.Split(f[3], "|")
		if len(parts) != 4 {
			continue
		}
		w, ok := pids[pid]
		if !ok {
			w = len(pids) + 1
			pids[pid] = w
		}
		last := func(s string) string {
			v := strings.Split(s, ", ")
			return strings.TrimSpace(v[len(v)-1])
		}
		sec := func(s string) time.Duration {
			v, err := strconv.ParseFloat(last(s), 64)
			if err != nil {
				return 0
			}
			return time.Duration(v * float64(time.Second))
		}
		end := time.Unix(0, int64(msec*1e9))
		e := &sim.Event{Kind: sim.KindCall, Req: req, Call: 1, Worker: w, Retried: strings.Contains(parts[2], ",")}
		e.Total = sec(parts[2])
		e.At = end.Sub(t0.Round(0)) // wall clock against wall clock
		e.Start = e.At - e.Total
		e.Connect = sec(parts[0])
		e.StartTransfer = sec(parts[1])
		if id, nth, ok := strings.Cut(last(parts[3]), "/"); ok {
			e.Conn, _ = strconv.Atoi(id)
			e.NewConn = nth == "1"
			e.Reused = !e.NewConn
		}
		if f[4] != "200" {
			e.Error = "HTTP " + f[4] + " from nginx"
		}
		emit(e)
	}
	return sc.Err()
}
