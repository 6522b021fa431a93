package class

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// joinAs dials a student connection and sends a join; it returns the
// connection and the answer (joined or error).
func joinAs(t *testing.T, hs string, join map[string]any, header http.Header) (*websocket.Conn, map[string]any) {
	t.Helper()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs, "http")+"/class/ws", header)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	join["type"] = "join"
	c.WriteJSON(join)
	return c, read(t, c, "joined", "error")
}

// closed waits for the server to close c, returning the messages before.
func closed(t *testing.T, c *websocket.Conn) []map[string]any {
	t.Helper()
	var seen []map[string]any
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		var m map[string]any
		if err := c.ReadJSON(&m); err != nil {
			if ne, ok := err.(interface{ Timeout() bool }); ok && ne.Timeout() {
				t.Fatalf("the connection stayed open; read %v", seen)
			}
			return seen
		}
		seen = append(seen, m)
	}
}

// A new student needs the join code: in the join, or from the landing
// page (typed, or the teacher's link), which keeps it in a cookie the lab
// page's WebSocket sends. Wrong codes are counted per address; past the
// limit even the right one waits. The teacher can change the code:
// students who joined keep their seats.
func TestJoinCode(t *testing.T) {
	cs, hs := testClass(t, Options{Limits: Limits{WrongCodes: 3}})
	if _, m := joinAs(t, hs.URL, map[string]any{"name": "Ann"}, nil); m["type"] != "error" || m["field"] != "code" {
		t.Errorf("join without a code: %v", m)
	}
	// The teacher's link sets the cookie; the page's join then needs none.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	get := func(path string) string {
		resp, err := browser.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if body := get("/class/?code=" + url.QueryEscape(strings.ToLower(testCode))); !strings.Contains(body, `data-state="ok"`) {
		t.Fatalf("the teacher's link: %s", body)
	}
	u, _ := url.Parse(hs.URL + "/class/ws")
	cookies := jar.Cookies(u)
	if len(cookies) != 1 || cookies[0].Name != codeCookie {
		t.Fatalf("cookies for /class/ws: %v", cookies)
	}
	header := http.Header{"Cookie": {cookies[0].Name + "=" + cookies[0].Value}}
	ann, m := joinAs(t, hs.URL, map[string]any{"name": "Ann"}, header)
	if m["type"] != "joined" {
		t.Fatalf("join with the landing page's cookie: %v", m)
	}
	token := m["token"].(string)
	if body := get("/class/"); !strings.Contains(body, `data-state="ok"`) {
		t.Errorf("the landing page forgot the code")
	}
	// Three wrong codes from one address (page or join), then even the
	// right code is refused for a minute.
	if body := get("/class/?code=WRONG1"); !strings.Contains(body, `data-state="wrong"`) {
		t.Errorf("a wrong code on the landing page: %s", body)
	}
	for _, code := range []string{"WRONG2", "WRONG3"} {
		if _, m := joinAs(t, hs.URL, map[string]any{"name": "Bob", "code": code}, nil); m["field"] != "code" || !strings.Contains(m["message"].(string), "wrong join code") {
			t.Errorf("wrong code %s: %v", code, m)
		}
	}
	if _, m := joinAs(t, hs.URL, map[string]any{"name": "Bob", "code": testCode}, nil); m["field"] != "code" || !strings.Contains(m["message"].(string), "too many wrong") {
		t.Errorf("the right code after too many wrong ones: %v", m)
	}
	if body := get("/class/?code=" + testCode); !strings.Contains(body, `data-state="blocked"`) {
		t.Errorf("the landing page after too many wrong codes: %s", body)
	}
	// A student who joined rejoins with their token, code or none.
	if _, m := joinAs(t, hs.URL, map[string]any{"name": "x", "token": token}, nil); m["type"] != "joined" || m["name"] != "Ann" {
		t.Errorf("rejoin with a token: %v", m)
	}
	// A new code: the old one no longer admits anyone.
	old := cs.Code()
	teacher, _, err := dial(t, hs, "?teacher=teacher-secret", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer teacher.Close()
	teacher.WriteJSON(map[string]any{"type": "new_code"})
	for {
		st := read(t, teacher, "state")
		if st["code"] != old {
			if st["code"] != cs.Code() || len(cs.Code()) != CodeLen {
				t.Errorf("state code %v, class code %v", st["code"], cs.Code())
			}
			break
		}
	}
	if cs.codeIs(old) || !cs.codeIs(strings.ToLower(cs.Code())) {
		t.Errorf("after new_code: old %v accepted %v, new %v accepted %v", old, cs.codeIs(old), cs.Code(), cs.codeIs(cs.Code()))
	}
	ann.WriteJSON(map[string]any{"type": "answer", "lab": php, "exercise": "warm-call", "value": "22"})
	if m := read(t, ann, "ack", "error"); m["type"] != "ack" {
		t.Errorf("a joined student after new_code: %v", m)
	}
}

// NormalizeCode accepts what a student may type and refuses the rest.
func TestNormalizeCode(t *testing.T) {
	for in, want := range map[string]string{"abc-def": "ABCDEF", " AB CD ": "ABCD", "x7Y9": "X7Y9"} {
		if got, err := NormalizeCode(in); err != nil || got != want {
			t.Errorf("NormalizeCode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "abc", "ab<script>", strings.Repeat("A", 17), "ÀBCD"} {
		if got, err := NormalizeCode(in); err == nil {
			t.Errorf("NormalizeCode(%q) = %q, want an error", in, got)
		}
	}
	seen := map[string]bool{}
	for range 50 {
		c := NewCode()
		if n, err := NormalizeCode(c); err != nil || n != c || len(c) != CodeLen {
			t.Fatalf("NewCode() = %q (%v)", c, err)
		}
		seen[c] = true
	}
	if len(seen) < 45 {
		t.Errorf("%d different codes in 50", len(seen))
	}
}

// One address may join at most PerAddress students and hold at most
// ConnsPerAddress connections; one connection may send at most JoinTries
// joins; a connection that never joins is closed after JoinWait.
func TestJoinLimits(t *testing.T) {
	cs, hs := testClass(t, Options{Limits: Limits{PerAddress: 2, ConnsPerAddress: 5, JoinTries: 3, JoinWait: 300 * time.Millisecond}})
	for i, name := range []string{"a", "b"} {
		if _, m := joinAs(t, hs.URL, map[string]any{"name": name, "code": testCode}, nil); m["type"] != "joined" {
			t.Fatalf("student %d: %v", i, m)
		}
	}
	third, m := joinAs(t, hs.URL, map[string]any{"name": "c", "code": testCode}, nil)
	if m["type"] != "error" || !strings.Contains(m["message"].(string), "from your address") {
		t.Errorf("a third student from one address: %v", m)
	}
	// The same connection tries again (2nd, 3rd join), then a 4th closes it.
	for range 2 {
		third.WriteJSON(map[string]any{"type": "join", "name": "c", "code": testCode})
		read(t, third, "error")
	}
	third.WriteJSON(map[string]any{"type": "join", "name": "c", "code": testCode})
	seen := closed(t, third)
	if len(seen) == 0 || !strings.Contains(seen[len(seen)-1]["message"].(string), "too many join attempts") {
		t.Errorf("the 4th join on one connection: %v", seen)
	}
	// Connections per address: two students' and three idle ones fill
	// five; the sixth upgrade is refused.
	seats := func() int {
		cs.mu.Lock()
		defer cs.mu.Unlock()
		return cs.studentSeats
	}
	for deadline := time.Now().Add(5 * time.Second); seats() != 2 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond) // the closed connection leaves its seat
	}
	var idle []*websocket.Conn
	for range 3 {
		c, _, err := dial(t, hs, "", nil)
		if err != nil {
			t.Fatalf("an idle connection within the limit: %v", err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	if _, resp, err := dial(t, hs, "", nil); err == nil || resp == nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a sixth connection from one address: %v %v", err, resp)
	}
	// Connections that never join are closed after JoinWait, with a word.
	for _, c := range idle {
		seen := closed(t, c)
		if len(seen) != 1 || !strings.Contains(seen[0]["message"].(string), "join within") {
			t.Errorf("an idle connection: %v", seen)
		}
	}
	// A teacher's page is never "idle".
	teacher, _, err := dial(t, hs, "?teacher=teacher-secret", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer teacher.Close()
	time.Sleep(600 * time.Millisecond)
	teacher.WriteJSON(map[string]any{"type": "watch", "lab": php})
	read(t, teacher, "state")
	deadline := time.Now().Add(5 * time.Second)
	for cs.Conns() != 3 && time.Now().Before(deadline) { // the two students and the teacher
		time.Sleep(10 * time.Millisecond)
	}
	if n := cs.Conns(); n != 3 {
		t.Errorf("%d connections open, want 3", n)
	}
}

// The teacher removes a student: their answers leave the histogram, their
// page is told and closed, and neither their token nor their name joins
// again; another name may.
func TestRemove(t *testing.T) {
	_, hs := testClass(t, Options{})
	ann, m := joinAs(t, hs.URL, map[string]any{"name": "Ann", "code": testCode}, nil)
	if m["type"] != "joined" {
		t.Fatal(m)
	}
	token := m["token"].(string)
	ann.WriteJSON(map[string]any{"type": "answer", "lab": php, "exercise": "warm-call", "value": "22"})
	read(t, ann, "ack")
	bob, _ := joinAs(t, hs.URL, map[string]any{"name": "Bob", "code": testCode}, nil)
	bob.WriteJSON(map[string]any{"type": "answer", "lab": php, "exercise": "warm-call", "value": "30"})
	read(t, bob, "ack")
	teacher, _, err := dial(t, hs, "?teacher=teacher-secret", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer teacher.Close()
	teacher.WriteJSON(map[string]any{"type": "watch", "lab": php})
	teacher.WriteJSON(map[string]any{"type": "remove", "name": "Nobody"})
	if m := read(t, teacher, "error"); m["field"] != "name" {
		t.Errorf("removing a student who is not there: %v", m)
	}
	teacher.WriteJSON(map[string]any{"type": "remove", "name": "Ann"})
	seen := closed(t, ann)
	if len(seen) == 0 || seen[len(seen)-1]["type"] != "removed" {
		t.Errorf("the removed student's page got %v", seen)
	}
	for {
		st := read(t, teacher, "state")
		names, _ := json.Marshal(st["names"])
		if string(names) != `["Bob"]` {
			continue
		}
		for _, e := range st["exercises"].([]any) {
			ex := e.(map[string]any)
			if ex["id"] == "warm-call" && ex["histogram"].(map[string]any)["count"] != 1.0 {
				t.Errorf("warm-call after the removal: %v", ex["histogram"])
			}
		}
		break
	}
	if _, m := joinAs(t, hs.URL, map[string]any{"name": "Ann", "token": token}, nil); m["type"] != "error" || m["field"] != "token" {
		t.Errorf("rejoin with the removed token: %v", m)
	}
	if _, m := joinAs(t, hs.URL, map[string]any{"name": " Ann ", "code": testCode}, nil); m["type"] != "error" || m["field"] != "name" {
		t.Errorf("rejoin with the removed name: %v", m)
	}
	if _, m := joinAs(t, hs.URL, map[string]any{"name": "Ann B", "code": testCode}, nil); m["type"] != "joined" {
		t.Errorf("join with another name: %v", m)
	}
}

// Before the reveal, /exercise/api gives a class the questions without
// what computes their answers: no answer, tolerance or explanation, and no
// scenario or command. That the simulator on the page can still compute
// an answer is said plainly on the teacher's page (and, for seed 0, that
// the built pages hold the answers).
func TestHiddenAnswers(t *testing.T) {
	for _, seed := range []uint64{0, 7} {
		_, hs := testClass(t, Options{Seed: seed})
		resp, err := http.Get(hs.URL + "/exercise/api?lab=" + php + "&seed=7")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var api struct {
			Hidden    bool             `json:"hidden"`
			Exercises []map[string]any `json:"exercises"`
		}
		if err := json.Unmarshal(body, &api); err != nil || !api.Hidden || len(api.Exercises) == 0 {
			t.Fatalf("/exercise/api: %s", body)
		}
		for _, x := range api.Exercises {
			for _, k := range []string{"answer", "scenario", "tolerance", "tolerance_text", "answer_text", "explain", "correct"} {
				if v, ok := x[k]; ok && v != nil && v != "" {
					t.Errorf("%s: %s = %v before the reveal", x["id"], k, v)
				}
			}
			if x["question"] == "" {
				t.Errorf("%s: no question", x["id"])
			}
		}
		if strings.Contains(string(body), "sim run") || strings.Contains(string(body), "--set") {
			t.Errorf("a command in the hidden exercises: %s", body)
		}
		for lang, words := range map[string]string{"en": "Hidden means not shown, not secret", "ko": "숨김은 보이지 않는다는 뜻이지 비밀"} {
			resp, err = http.Get(hs.URL + "/class/teacher?token=teacher-secret&lang=" + lang)
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(page), words) {
				t.Errorf("seed %d: the teacher's page (%s) does not say that answers can be computed", seed, lang)
			}
			if got := strings.Contains(string(page), `<span data-t="seedzero">`); got != (seed == 0) {
				t.Errorf("seed %d: the seed-0 notice shown %v", seed, got)
			}
		}
	}
}
