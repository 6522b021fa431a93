package class

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/connlab/connlab/sim/web"
)

// fakePeer stands in for a page's web.Conn: it keeps the replies.
type fakePeer struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	replies [][]byte
}

func newFakePeer() *fakePeer {
	p := &fakePeer{}
	p.ctx, p.cancel = context.WithCancelCause(context.Background())
	return p
}

func (p *fakePeer) Send(b []byte) bool {
	if p.ctx.Err() != nil {
		return false
	}
	p.replies = append(p.replies, b)
	return true
}
func (p *fakePeer) Finish(cause error)       { p.cancel(cause) }
func (p *fakePeer) Queued() int              { return 0 }
func (p *fakePeer) Taken() <-chan struct{}   { return nil }
func (p *fakePeer) Context() context.Context { return p.ctx }

var (
	fuzzCatalogOnce sync.Once
	fuzzCatalog     *Catalog
	fuzzCatalogErr  error
)

// FuzzClassProtocol sends a page's messages to a class, one a line: a line
// starting with "T" is the teacher's, "s" or "t" two students' on two
// addresses, anything else the first student's. Whatever they send, no
// reply to a message is bigger than what the class holds, an error is a
// few hundred bytes, and the class stays whole: names unique, the limits
// kept, a teacher's snapshot that encodes.
func FuzzClassProtocol(f *testing.F) {
	f.Add([]byte(`s{"type":"join","name":"Ann","code":"TEST-CODE"}` + "\n" +
		`s{"type":"answer","lab":"php-persistent-share","exercise":"warm-call","value":"22"}` + "\n" +
		`T{"type":"reveal","lab":"php-persistent-share","exercise":"warm-call"}` + "\n" +
		`T{"type":"remove","name":"Ann"}`))
	fuzzCatalogOnce.Do(func() { fuzzCatalog, fuzzCatalogErr = LoadCatalog(web.NewIndex([]string{"../../labs"}, nil)) })
	if fuzzCatalogErr != nil {
		f.Fatal(fuzzCatalogErr)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := Limits{MaxStudents: 3, PerAddress: 2, JoinTries: 3, WrongCodes: 3, Strikes: 20, Burst: 1000, Rate: 1000}
		s, err := New(Options{Catalog: fuzzCatalog, Seed: 3, Token: "tok", Code: "TEST-CODE", Limits: lim})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		pages := map[byte]*conn{}
		page := func(who byte) *conn {
			if c := pages[who]; c != nil {
				return c
			}
			c := &conn{s: s, ws: newFakePeer(), teacher: who == 'T', lang: "en", addr: "192.0.2." + string(rune('0'+who%10)),
				dirty: make(chan struct{}, 1), bucket: web.NewBucket(s.lim.Rate, s.lim.Burst)}
			s.mu.Lock()
			s.conns[c] = true
			if c.teacher {
				s.teachers[c] = true
			} else {
				s.addrUseLocked(c.addr).conns++
			}
			s.mu.Unlock()
			pages[who] = c
			return c
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			who := byte('s')
			if len(line) > 0 && (line[0] == 'T' || line[0] == 's' || line[0] == 't') {
				who, line = line[0], line[1:]
			}
			c := page(who)
			p := c.ws.(*fakePeer)
			if p.ctx.Err() != nil {
				continue // the class closed this page
			}
			before := len(p.replies)
			c.receive(web.Message{Data: line, Binary: len(line) > 0 && line[0] == 0})
			for _, r := range p.replies[before:] {
				var m struct {
					Type string `json:"type"`
				}
				if err := json.Unmarshal(r, &m); err != nil {
					t.Fatalf("a reply that is not JSON: %q", r)
				}
				if m.Type == "error" && len(r) > 1024 {
					t.Fatalf("an error of %d bytes to a message of %d", len(r), len(line))
				}
				if len(r) > 1<<20 {
					t.Fatalf("a reply of %d bytes", len(r))
				}
			}
		}
		s.mu.Lock()
		if len(s.order) > lim.MaxStudents || len(s.order) != len(s.students) || len(s.names) != len(s.order) {
			t.Fatalf("%d students in order, %d by token, %d names", len(s.order), len(s.students), len(s.names))
		}
		perAddr := map[string]int{}
		for _, stu := range s.order {
			perAddr[stu.addr]++
			if !s.names[stu.name] || s.students[stu.token] != stu {
				t.Fatalf("student %q is not indexed", stu.name)
			}
		}
		for addr, n := range perAddr {
			if n > lim.PerAddress || s.addrs[addr] == nil || s.addrs[addr].students != n {
				t.Fatalf("%s: %d students, counted %v", addr, n, s.addrs[addr])
			}
		}
		s.mu.Unlock()
		if _, err := json.Marshal(s.snapshot(page('T'))); err != nil {
			t.Fatal(err)
		}
	})
}
