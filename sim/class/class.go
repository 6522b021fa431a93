// Package class is the classroom side of connlab's exercises, mounted into
// `sim serve`: the seeded exercises a lab page asks for (/exercise/api,
// api.go), and class mode (--class), where students join with a display
// name and the class's join code, their predictions stream to the
// teacher's page as a live histogram per exercise, and the teacher reveals
// each answer when ready (/class/...).
//
// The files follow the parts: pages.go (the landing, teacher and info
// pages), transport.go (one WebSocket per page, on web.Conn), student.go
// and teacher.go (the two protocols), snapshot.go (what the teacher's page
// draws), state.go and histogram.go (answers and how they are counted).
package class

import (
	"context"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// Options configure a class.
type Options struct {
	// Catalog holds the labs' exercises.
	Catalog *Catalog
	// Seed is the class's seed: every student gets the same numbers, so the
	// histograms compare like with like (0: the labs' own numbers).
	Seed uint64
	// PerStudent gives each student a seed of their own instead, so
	// neighbours get different numbers; the histograms then show each
	// prediction as a percentage of that student's answer.
	PerStudent bool
	// Token is the teacher's secret ("" picks a random one).
	Token string
	// Code is the join code students type or follow the teacher's link
	// with ("" picks a random one; see NormalizeCode).
	Code   string
	Limits Limits
	Logf   func(format string, args ...any)
	// Clock tells the time the per-minute limits count in (nil:
	// time.Now); tests move it instead of waiting a minute.
	Clock func() time.Time
}

// A Server is one class: its students, their answers and the teachers'
// pages. Mount its handlers on a mux; Close ends every connection.
type Server struct {
	opt    Options
	lim    Limits
	cat    *Catalog
	token  string
	logf   func(string, ...any)
	now    func() time.Time
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	code     string
	students map[string]*student // by token
	order    []*student
	names    map[string]bool
	removed  map[string]bool // names and tokens the teacher removed
	revealed map[exKey]bool
	conns    map[*conn]bool
	teachers map[*conn]bool
	addrs    map[string]*addrUse // by machine (addrKey)
	wrong    []int64             // Unix seconds of the class's recent wrong codes (at most WrongCodesClass)
	refresh  *time.Timer         // redraws the teachers' pages when a wrong code leaves the count
	// seats taken by connections, from before their upgrade to their end
	teacherSeats, studentSeats int
	version                    uint64 // bumped on every change the teachers see
}

// addrUse is what one machine (addrKey) holds and has tried.
type addrUse struct {
	conns    int     // open student connections
	students int     // students it joined (removed ones not counted)
	wrong    []int64 // Unix seconds of recent wrong codes
}

// New starts a class. Close it when done.
func New(opt Options) (*Server, error) {
	if opt.Catalog == nil {
		return nil, fmt.Errorf("class: no catalog")
	}
	code := NewCode()
	if opt.Code != "" {
		var err error
		if code, err = NormalizeCode(opt.Code); err != nil {
			return nil, err
		}
	}
	s := &Server{opt: opt, lim: opt.Limits.withDefaults(), cat: opt.Catalog, token: opt.Token, logf: opt.Logf, code: code,
		students: map[string]*student{}, names: map[string]bool{}, removed: map[string]bool{}, revealed: map[exKey]bool{},
		conns: map[*conn]bool{}, teachers: map[*conn]bool{}, addrs: map[string]*addrUse{}}
	if s.logf == nil {
		s.logf = func(string, ...any) {}
	}
	if s.now = opt.Clock; s.now == nil {
		s.now = time.Now
	}
	if s.token == "" {
		s.token = newToken()
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Token is the teacher's secret; the teacher's page is /class/teacher?token=….
func (s *Server) Token() string { return s.token }

// TeacherPath is the teacher page's path with its token.
func (s *Server) TeacherPath() string { return "/class/teacher?token=" + url.QueryEscape(s.token) }

// Code is the class's join code now (the teacher may change it).
func (s *Server) Code() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.code
}

// JoinPath is the students' link with the join code.
func (s *Server) JoinPath() string { return "/class/?code=" + url.QueryEscape(s.Code()) }

// Mount adds the class's handlers to mux: /class/ (the students' landing
// page), /class/info, /class/teacher and /class/ws. When mux already
// serves the built site (sim serve mounts it at / first), the lab pages'
// data files, /labs/*.json, are then served without their exercises
// (labdata.go).
func (s *Server) Mount(mux *http.ServeMux) {
	mountLabData(mux)
	mux.HandleFunc("GET /class/{$}", s.serveLanding)
	mux.HandleFunc("GET /class/info", s.serveInfo)
	mux.HandleFunc("GET /class/teacher", s.serveTeacher)
	mux.HandleFunc("GET /class/ws", s.serveWS)
}

// Close ends every connection and waits for their goroutines.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return
	}
	s.closed = true
	if s.refresh != nil {
		s.refresh.Stop()
		s.refresh = nil
	}
	s.mu.Unlock()
	s.cancel() // every connection's context derives from it
	s.wg.Wait()
}

// Conns is the number of open WebSocket connections (students and
// teachers), for tests that check nothing is left behind.
func (s *Server) Conns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *Server) isTeacher(token string) bool {
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(s.token)) == 1
}

// codeIs reports whether code is the class's join code.
func (s *Server) codeIs(code string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.codeIsLocked(code)
}

func (s *Server) codeIsLocked(code string) bool {
	code, err := NormalizeCode(code)
	return err == nil && subtle.ConstantTimeCompare([]byte(code), []byte(s.code)) == 1
}
