package class

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"
)

// clearsCookie reports whether resp deletes the join code's cookie.
func clearsCookie(resp *http.Response) bool {
	for _, c := range resp.Cookies() {
		if c.Name == codeCookie && c.MaxAge < 0 && c.Path == "/class" {
			return true
		}
	}
	return false
}

// A join code guessed through the landing page's cookie counts as one
// guessed in ?code=: as many wrong ones block the address, and a blocked
// address gets no "ok" for the right code through the cookie either. A
// wrong cookie is cleared in the answer, so a student whose browser kept
// an earlier code (the teacher gave a new one) is not blocked by reloading
// the page.
func TestCookieGuesses(t *testing.T) {
	const n = 4
	cs, hs, mux, clock := lanClass(t, Options{Limits: Limits{WrongCodes: n}})
	cookieAddr, queryAddr := from("192.168.1.21"), from("192.168.1.22")
	for i := range n {
		guess := fmt.Sprintf("GUESS%d", i)
		byCookie, resp := landing(t, mux, cookieAddr, "", guess)
		byQuery, _ := landing(t, mux, queryAddr, "?code="+guess, "")
		if byCookie != "wrong" || byQuery != "wrong" {
			t.Errorf("wrong code %d: by cookie %q, by ?code= %q; want wrong, wrong", i+1, byCookie, byQuery)
		}
		if !clearsCookie(resp) {
			t.Errorf("wrong code %d in the cookie: not cleared (Set-Cookie %q)", i+1, resp.Header.Values("Set-Cookie"))
		}
	}
	for _, tc := range []struct{ addr, query, cookie string }{
		{cookieAddr, "", "GUESSX"},
		{cookieAddr, "", testCode},
		{cookieAddr, "?code=" + testCode, ""},
		{queryAddr, "", testCode},
		{queryAddr, "?code=" + testCode, ""},
	} {
		if st, resp := landing(t, mux, tc.addr, tc.query, tc.cookie); st != "blocked" || len(resp.Cookies()) != 0 {
			t.Errorf("after %d wrong codes, from %s with %q and cookie %q: %q, cookies %v; want blocked, none", n, tc.addr, tc.query, tc.cookie, st, resp.Cookies())
		}
	}
	// Another address is not blocked, and its right cookie is kept.
	if st, resp := landing(t, mux, from("192.168.1.23"), "", testCode); st != "ok" || len(resp.Cookies()) != 0 {
		t.Errorf("the right cookie from another address: %q, cookies %v", st, resp.Cookies())
	}
	// A minute later the addresses may try again.
	clock.Add(61 * time.Second)
	if st, _ := landing(t, mux, cookieAddr, "", testCode); st != "ok" {
		t.Errorf("the right cookie a minute later: %q", st)
	}

	// A browser kept the code; the teacher gives a new one. Reloading the
	// landing page more often than the limit never blocks it: the first
	// reload clears the old code, the others have none to check.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	reload := func(query string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", hs.URL+"/class/"+query, nil)
		req.Header.Set(testAddr, from("192.168.1.40"))
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return landingState(t, string(body))
	}
	if st := reload("?code=" + testCode); st != "ok" {
		t.Fatalf("the teacher's link: %q", st)
	}
	cs.mu.Lock()
	cs.code = "NEWCODE1"
	cs.mu.Unlock()
	var seen []string
	for range 3 * n {
		seen = append(seen, reload(""))
	}
	if seen[0] != "wrong" || strings.Count(strings.Join(seen, " "), "none") != len(seen)-1 {
		t.Errorf("reloads with the previous code's cookie: %v; want wrong once, then none", seen)
	}
	if st := reload("?code=newcode1"); st != "ok" {
		t.Errorf("the new code after the reloads: %q", st)
	}
}
