package stack

import (
	"fmt"
	"os/exec"
)

// App servers.
const (
	Gunicorn = "gunicorn" // gunicorn -k gthread: threads in one or more worker processes
	Flask    = "flask"    // Flask's development server (Werkzeug), app.run(threaded=True)
)

// Redis client modes of the app.
const (
	RedisNew  = "new"  // redis.Redis() in the view: a connection per request
	RedisPool = "pool" // one redis-py ConnectionPool per process
)

// Config describes one stack. The zero values of the optional fields take
// the defaults of Defaults.
type Config struct {
	AppServer string // Gunicorn or Flask
	Redis     string // RedisNew or RedisPool
	// Keepalive is nginx's "keepalive N" in the upstream block, with
	// proxy_http_version 1.1 and Connection ""; 0: none, so nginx 1.22
	// speaks HTTP/1.0 with Connection: close to the app.
	Keepalive    int
	NginxWorkers int
	// GunicornWorkers and GunicornThreads: gunicorn -w and --threads
	// (gthread worker); GunicornKeepalive: --keep-alive, the seconds a
	// kept connection may wait for its next request (gunicorn: 2).
	GunicornWorkers   int
	GunicornThreads   int
	GunicornKeepalive int

	// Ports on 127.0.0.1 (a private namespace has them all free).
	NginxPort, AppPort, RedisPort int

	Python string // the interpreter with flask and redis (Debian's /usr/bin/python3)

	// Dir holds the configuration, logs and sockets' files; "": a new
	// temporary directory, removed by Stop (a given one is left to its
	// owner).
	Dir string
}

// Defaults fills the zero fields of c.
func (c Config) Defaults() Config {
	if c.AppServer == "" {
		c.AppServer = Gunicorn
	}
	if c.Redis == "" {
		c.Redis = RedisNew
	}
	if c.NginxWorkers == 0 {
		c.NginxWorkers = 2
	}
	if c.GunicornWorkers == 0 {
		c.GunicornWorkers = 1
	}
	if c.GunicornThreads == 0 {
		c.GunicornThreads = 8
	}
	if c.GunicornKeepalive == 0 {
		c.GunicornKeepalive = 2
	}
	if c.NginxPort == 0 {
		c.NginxPort = 8080
	}
	if c.AppPort == 0 {
		c.AppPort = 5000
	}
	if c.RedisPort == 0 {
		c.RedisPort = 6379
	}
	if c.Python == "" {
		c.Python = "/usr/bin/python3"
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.AppServer != Gunicorn && c.AppServer != Flask:
		return fmt.Errorf("stack: app server %q: want %q or %q", c.AppServer, Gunicorn, Flask)
	case c.Redis != RedisNew && c.Redis != RedisPool:
		return fmt.Errorf("stack: redis mode %q: want %q or %q", c.Redis, RedisNew, RedisPool)
	case c.Keepalive < 0:
		return fmt.Errorf("stack: keepalive %d: want 0 (off) or more", c.Keepalive)
	}
	return nil
}

// Hops lists the stack's three hops.
func (c Config) Hops() []Hop {
	return []Hop{{"nginx", c.NginxPort}, {"app", c.AppPort}, {"redis", c.RedisPort}}
}

// Packages lists the Debian packages a stack needs, by program.
var Packages = map[string]string{
	"nginx":        "nginx-light",
	"redis-server": "redis-server",
	"gunicorn":     "gunicorn",
	"flask":        "python3-flask",
	"redis-py":     "python3-redis",
	"siege":        "siege",
}

// Missing names the Debian packages that are not installed for c (siege
// only when wantSiege).
func Missing(c Config, wantSiege bool) []string {
	c = c.Defaults()
	var miss []string
	for _, prog := range []string{"nginx", "redis-server"} {
		if _, err := exec.LookPath(prog); err != nil {
			miss = append(miss, Packages[prog])
		}
	}
	if c.AppServer == Gunicorn {
		if _, err := exec.LookPath("gunicorn"); err != nil {
			miss = append(miss, Packages["gunicorn"])
		}
	}
	for _, mod := range []struct{ name, pkg string }{{"flask", "flask"}, {"redis", "redis-py"}} {
		if exec.Command(c.Python, "-c", "import "+mod.name).Run() != nil {
			miss = append(miss, Packages[mod.pkg])
		}
	}
	if wantSiege {
		if _, err := exec.LookPath("siege"); err != nil {
			miss = append(miss, Packages["siege"])
		}
	}
	return miss
}
