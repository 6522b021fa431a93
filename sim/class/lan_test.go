package class

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/connlab/connlab/sim/web"
	"github.com/gorilla/websocket"
)

// Tests that play students and guessers on a classroom's network from one
// machine: a request's remote address is what its X-Test-Addr header says
// (lanClass's server sets r.RemoteAddr from it), or the RemoteAddr of a
// request handed to the mux directly (landing).

// fakeClock is a clock the tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// testAddr is the test header that names a request's remote address.
const testAddr = "X-Test-Addr"

// lanClass starts a class whose requests come from the address their
// X-Test-Addr header names, on a clock the test moves. It returns the
// class, its server, its mux (for requests made without a network) and
// the clock.
func lanClass(t *testing.T, opt Options) (*Server, *httptest.Server, *http.ServeMux, *fakeClock) {
	t.Helper()
	cat, err := LoadCatalog(web.NewIndex([]string{"../../labs"}, nil))
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
	opt.Catalog, opt.Token, opt.Code, opt.Clock = cat, "teacher-secret", testCode, clock.Now
	cs, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	cs.Mount(mux)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get(testAddr); a != "" {
			r.RemoteAddr = a
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		cs.Close()
		hs.Close()
	})
	return cs, hs, mux, clock
}

// from is a remote address (host:port) of host, an IPv4 or IPv6 address.
func from(host string) string { return net.JoinHostPort(host, "50000") }

var stateRE = regexp.MustCompile(`data-state="([a-z]+)"`)

// landingState is the code's state a landing page shows.
func landingState(t *testing.T, body string) string {
	t.Helper()
	m := stateRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no code state in the landing page: %s", body)
	}
	return m[1]
}

// landing asks the mux for /class/ + query from addr, with the join code's
// cookie unless cookie is "": the state the page shows, and the response.
func landing(t *testing.T, mux http.Handler, addr, query, cookie string) (string, *http.Response) {
	t.Helper()
	req := httptest.NewRequest("GET", "/class/"+query, nil)
	req.RemoteAddr = addr
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: codeCookie, Value: cookie})
	}
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	return landingState(t, rec.Body.String()), rec.Result()
}

// wsURL is the class's WebSocket address on hs.
func wsURL(hs *httptest.Server, query string) string {
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/class/ws" + query
}

// joinFrom dials a student connection from addr, sends a join and returns
// the answer (joined or error); the connection is closed.
func joinFrom(t *testing.T, hs *httptest.Server, addr string, join map[string]any) map[string]any {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial(wsURL(hs, ""), http.Header{testAddr: {addr}})
	if err != nil {
		t.Fatalf("dial from %s: %v", addr, err)
	}
	defer c.Close()
	join["type"] = "join"
	if err := c.WriteJSON(join); err != nil {
		t.Fatal(err)
	}
	return read(t, c, "joined", "error")
}

// text is an error message's text.
func text(m map[string]any) string { return fmt.Sprint(m["message"]) }
