package class

import (
	"context"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"fmt"
	"github.com/connlab/connlab/sim/server"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/connlab/connlab/sim/lab"
	"github.com/gorilla/websocket"
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
	Token  string
	Limits Limits
	Logf   func(format string, args ...any)
}

// A Server is one class: its students, their answers and the teachers'
// pages. Mount its handlers on a mux; Close ends every connection.
type Server struct {
	opt    Options
	lim    Limits
	cat    *Catalog
	token  string
	logf   func(string, ...any)
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	students map[string]*student // by token
	order    []*student
	names    map[string]bool
	revealed map[exKey]bool
	conns    map[*conn]bool
	teachers map[*conn]bool
	version  uint64 // bumped on every change the teachers see

	upgrader websocket.Upgrader
}

// New starts a class. Close it when done.
func New(opt Options) (*Server, error) {
	if opt.Catalog == nil {
		return nil, fmt.Errorf("class: no catalog")
	}
	s := &Server{opt: opt, lim: opt.Limits.withDefaults(), cat: opt.Catalog, token: opt.Token, logf: opt.Logf,
		students: map[string]*student{}, names: map[string]bool{}, revealed: map[exKey]bool{},
		conns: map[*conn]bool{}, teachers: map[*conn]bool{}}
	if s.logf == nil {
		s.logf = func(string, ...any) {}
	}
	if s.token == "" {
		s.token = newToken()
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.upgrader = websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 4096, CheckOrigin: server.SameOrigin}
	return s, nil
}

// Token is the teacher's secret; the teacher's page is /class/teacher?token=….
func (s *Server) Token() string { return s.token }

// TeacherPath is the teacher page's path with its token.
func (s *Server) TeacherPath() string { return "/class/teacher?token=" + url.QueryEscape(s.token) }

// Mount adds the class's handlers to mux: /class/ (the students' landing
// page), /class/info, /class/teacher and /class/ws.
func (s *Server) Mount(mux *http.ServeMux) {
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
	var all []*conn
	for c := range s.conns {
		all = append(all, c)
	}
	s.mu.Unlock()
	s.cancel()
	for _, c := range all {
		c.close()
	}
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

// Info is what GET /class/info answers: lab pages ask it to learn that
// class mode is on.
type Info struct {
	Class      bool     `json:"class"`
	PerStudent bool     `json:"per_student"`
	Labs       []string `json:"labs"`
}

func (s *Server) serveInfo(w http.ResponseWriter, r *http.Request) {
	info := Info{Class: true, PerStudent: s.opt.PerStudent}
	for _, l := range s.cat.Labs {
		info.Labs = append(info.Labs, l.Name)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(info)
}

//go:embed teacher.html
var teacherHTML string

//go:embed landing.html
var landingHTML string

var (
	teacherTmpl = template.Must(template.New("teacher").Parse(teacherHTML))
	landingTmpl = template.Must(template.New("landing").Parse(landingHTML))
)

func (s *Server) serveTeacher(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if !s.isTeacher(r.URL.Query().Get("token")) {
		http.Error(w, "This is the teacher's page: open the address `sim serve --class` printed (it carries the token).", http.StatusForbidden)
		return
	}
	lang := r.URL.Query().Get("lang")
	if lang != "ko" {
		lang = "en"
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	teacherTmpl.Execute(w, map[string]any{"Token": s.token, "Lang": lang})
}

func (s *Server) serveLanding(w http.ResponseWriter, r *http.Request) {
	type labLink struct{ Name, Title, TitleKo string }
	var labs []labLink
	for _, l := range s.cat.Labs {
		labs = append(labs, labLink{l.Name, l.Title["en"], l.Title["ko"]})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	landingTmpl.Execute(w, map[string]any{"Labs": labs, "MaxName": s.lim.MaxName})
}

// conn is one WebSocket: a student's or a teacher's.
type conn struct {
	s       *Server
	ws      *websocket.Conn
	teacher bool
	lang    string
	send    chan []byte   // messages to write; full means a slow reader
	dirty   chan struct{} // teachers: the state changed
	done    chan struct{}
	once    sync.Once

	// read side only
	stu     *student
	tokens  float64
	last    time.Time
	strikes int
	watch   string // teachers: the lab shown
}

// close asks the connection to end: the reader stops at once, the writer
// sends what is queued (a last error, say), a close frame, and closes.
func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		c.ws.UnderlyingConn().SetReadDeadline(time.Now())
	})
}

// queue sends msg without blocking; a connection that cannot keep up is
// closed (the page reconnects and gets a fresh state).
func (c *conn) queue(msg any) {
	b, err := json.Marshal(msg)
	if err != nil {
		return
	}
	select {
	case c.send <- b:
	case <-c.done:
	default:
		c.s.logf("class: closing a connection that reads too slowly")
		c.close()
	}
}

func (s *Server) serveWS(w http.ResponseWriter, r *http.Request) {
	teacher := false
	if tok := r.URL.Query().Get("teacher"); tok != "" {
		if !s.isTeacher(tok) {
			http.Error(w, "wrong teacher token", http.StatusForbidden)
			return
		}
		teacher = true
	}
	s.mu.Lock()
	full := s.closed
	if teacher {
		full = full || len(s.teachers) >= s.lim.MaxTeachers
	} else {
		full = full || len(s.conns)-len(s.teachers) >= s.lim.MaxConns
	}
	s.mu.Unlock()
	if full {
		http.Error(w, "the class has too many connections", http.StatusServiceUnavailable)
		return
	}
	ws, err := s.upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // the upgrader answered (403 for a foreign Origin)
	}
	lang := r.URL.Query().Get("lang")
	if lang != "ko" {
		lang = "en"
	}
	c := &conn{s: s, ws: ws, teacher: teacher, lang: lang, send: make(chan []byte, 64), dirty: make(chan struct{}, 1),
		done: make(chan struct{}), tokens: float64(s.lim.Burst), last: time.Now()}
	ws.SetReadLimit(s.lim.MaxMessage)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ws.Close()
		return
	}
	s.conns[c] = true
	if teacher {
		s.teachers[c] = true
	}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()

	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writePump()
	}()
	// The request's context ends when `sim serve` shuts down.
	stop := context.AfterFunc(r.Context(), c.close)
	defer stop()
	if teacher {
		c.dirty <- struct{}{}
	}
	c.readPump()
	c.close()
	<-writerDone
	s.mu.Lock()
	delete(s.conns, c)
	delete(s.teachers, c)
	s.mu.Unlock()
}

const (
	writeWait  = 10 * time.Second
	pongWait   = 60 * time.Second
	pingPeriod = 25 * time.Second
	throttle   = 150 * time.Millisecond // teachers' updates, at most this often
)

func (c *conn) writePump() {
	ping := time.NewTicker(pingPeriod)
	defer ping.Stop()
	defer c.ws.Close()
	var lastState time.Time
	var pending <-chan time.Time
	write := func(b []byte) bool {
		c.ws.SetWriteDeadline(time.Now().Add(writeWait))
		if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
			c.close()
			return false
		}
		return true
	}
	for {
		select {
		case <-c.done:
			c.ws.SetWriteDeadline(time.Now().Add(time.Second))
			for flushed := false; !flushed; {
				select {
				case b := <-c.send:
					if c.ws.WriteMessage(websocket.TextMessage, b) != nil {
						flushed = true
					}
				default:
					flushed = true
				}
			}
			c.ws.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseGoingAway, ""))
			c.ws.Close()
			return
		case b := <-c.send:
			if !write(b) {
				return
			}
		case <-c.dirty:
			if pending == nil {
				wait := throttle - time.Since(lastState)
				pending = time.After(max(wait, 0))
			}
		case <-pending:
			pending = nil
			lastState = time.Now()
			b, err := json.Marshal(c.s.snapshot(c))
			if err != nil || !write(b) {
				return
			}
		case <-ping.C:
			c.ws.SetWriteDeadline(time.Now().Add(writeWait))
			if err := c.ws.WriteMessage(websocket.PingMessage, nil); err != nil {
				c.close()
				return
			}
		}
	}
}

// A message from a page. Students send join and answer; teachers send
// watch, reveal and reset.
type message struct {
	Type     string          `json:"type"`
	Name     string          `json:"name,omitempty"`
	Token    string          `json:"token,omitempty"`
	Lab      string          `json:"lab,omitempty"`
	Exercise string          `json:"exercise,omitempty"`
	Value    json.RawMessage `json:"value,omitempty"`
}

type errorMsg struct {
	Type    string `json:"type"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func (c *conn) fail(field, format string, args ...any) {
	c.queue(errorMsg{Type: "error", Field: field, Message: fmt.Sprintf(format, args...)})
}

// allow spends one token of the connection's bucket.
func (c *conn) allow() bool {
	now := time.Now()
	c.tokens = min(float64(c.s.lim.Burst), c.tokens+now.Sub(c.last).Seconds()*c.s.lim.Rate)
	c.last = now
	if c.tokens < 1 {
		return false
	}
	c.tokens--
	return true
}

func (c *conn) strike() bool {
	c.strikes++
	return c.strikes < c.s.lim.Strikes
}

func (c *conn) readPump() {
	c.ws.SetReadDeadline(time.Now().Add(pongWait))
	c.ws.SetPongHandler(func(string) error { c.ws.SetReadDeadline(time.Now().Add(pongWait)); return nil })
	for {
		kind, data, err := c.ws.ReadMessage()
		if err != nil {
			if websocket.IsCloseError(err, websocket.CloseMessageTooBig) || strings.Contains(err.Error(), "read limit") {
				c.s.logf("class: a message over %d bytes; connection closed", c.s.lim.MaxMessage)
			}
			return
		}
		c.ws.SetReadDeadline(time.Now().Add(pongWait))
		if !c.allow() {
			if c.strikes == 0 || c.strikes%10 == 0 {
				c.fail("", "too many messages: at most %g a second; this one was refused", c.s.lim.Rate)
			}
			if !c.strike() {
				c.fail("", "too many refused messages: connection closed")
				return
			}
			continue
		}
		if kind != websocket.TextMessage {
			c.fail("", "want JSON text messages")
			continue
		}
		var m message
		if err := json.Unmarshal(data, &m); err != nil {
			c.fail("", "not a JSON message: %v", err)
			if !c.strike() {
				return
			}
			continue
		}
		if c.teacher {
			c.teacherMessage(&m)
		} else {
			c.studentMessage(&m)
		}
	}
}

func (c *conn) studentMessage(m *message) {
	switch m.Type {
	case "join":
		c.join(m)
	case "answer":
		c.answer(m)
	case "reveal", "reset", "watch":
		c.fail("type", "only the teacher can %s", m.Type)
		c.strike()
	default:
		c.fail("type", "unknown message type %q (join, answer)", m.Type)
	}
}

// Joined is the answer to a student's join.
type Joined struct {
	Type       string     `json:"type"`
	Name       string     `json:"name"`
	Token      string     `json:"token"`
	Seed       uint64     `json:"seed"`
	PerStudent bool       `json:"per_student"`
	Revealed   []*Reveal  `json:"revealed"`
	Answered   []Answered `json:"answered"`
}

// Answered tells a student which of their predictions the class has.
type Answered struct {
	Lab      string `json:"lab"`
	Exercise string `json:"exercise"`
	Value    string `json:"value"`
}

func (c *conn) join(m *message) {
	s := c.s
	if c.stu != nil {
		c.fail("type", "already joined as %q", c.stu.name)
		return
	}
	s.mu.Lock()
	stu := s.students[m.Token]
	if stu == nil {
		name, err := SanitizeName(m.Name, s.lim.MaxName)
		if err != nil {
			s.mu.Unlock()
			c.fail("name", "%v", err)
			return
		}
		if len(s.order) >= s.lim.MaxStudents {
			s.mu.Unlock()
			c.fail("", "the class is full (%d students)", s.lim.MaxStudents)
			return
		}
		base := name
		for i := 2; s.names[name]; i++ {
			suffix := fmt.Sprintf(" %d", i)
			r := []rune(base)
			if len(r)+len([]rune(suffix)) > s.lim.MaxName {
				r = r[:s.lim.MaxName-len([]rune(suffix))]
			}
			name = string(r) + suffix
		}
		seed := s.opt.Seed
		if s.opt.PerStudent {
			seed = RandomSeed()
		}
		stu = &student{name: name, token: newToken(), seed: seed, answers: map[exKey]answer{}}
		s.students[stu.token] = stu
		s.order = append(s.order, stu)
		s.names[name] = true
		s.version++
	}
	c.stu = stu
	j := &Joined{Type: "joined", Name: stu.name, Token: stu.token, Seed: stu.seed, PerStudent: s.opt.PerStudent,
		Revealed: []*Reveal{}, Answered: []Answered{}}
	var revealed []exKey
	for k := range s.revealed {
		revealed = append(revealed, k)
	}
	for k, a := range stu.answers {
		j.Answered = append(j.Answered, Answered{Lab: k.Lab, Exercise: k.ID, Value: a.Raw})
	}
	s.mu.Unlock()
	for _, k := range revealed {
		if r := s.revealFor(stu, k, c.lang); r != nil {
			j.Revealed = append(j.Revealed, r)
		}
	}
	c.queue(j)
	s.touch()
}

// exercise finds a lab's exercise as a page names it.
func (s *Server) exercise(labName, id, lang string) (*Lab, *lab.Exercise, string) {
	l := s.cat.Lab(labName)
	if l == nil {
		return nil, nil, "lab"
	}
	x := l.Exercise(lang, id)
	if x == nil {
		return nil, nil, "exercise"
	}
	return l, x, ""
}

func rawValue(v json.RawMessage) (string, bool) {
	if len(v) == 0 {
		return "", false
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s, true
	}
	var f json.Number
	if err := json.Unmarshal(v, &f); err == nil {
		return f.String(), true
	}
	return "", false
}

func (c *conn) answer(m *message) {
	s := c.s
	if c.stu == nil {
		c.fail("type", "join first: {\"type\":\"join\",\"name\":\"…\"}")
		return
	}
	l, x, field := s.exercise(m.Lab, m.Exercise, c.lang)
	if field != "" {
		c.fail(field, "no %s %q", field, map[string]string{"lab": m.Lab, "exercise": m.Exercise}[field])
		return
	}
	k := exKey{l.Name, x.ID}
	raw, ok := rawValue(m.Value)
	if !ok {
		c.fail("value", "want the answer as a string or a number")
		return
	}
	s.mu.Lock()
	done := s.revealed[k]
	s.mu.Unlock()
	if done {
		c.fail("exercise", "the teacher has already revealed %q", x.ID)
		return
	}
	in, err := s.cat.Instance(s.ctx, x, c.stu.seed)
	if err != nil {
		c.fail("", "%v", err)
		return
	}
	a, err := judge(in, raw, s.lim.MaxText)
	if err != nil {
		c.fail("value", "%v", err)
		return
	}
	switch in.Kind {
	case "number":
		v, _ := in.Check(raw)
		a.Hit, a.Known = v.OK, true
		a.Rel = relative(a.Value, in.Answer.(float64))
	case "choice":
		a.Hit, a.Known = a.Pick == in.Correct, true
		a.Orig = originalChoice(x, in, a.Pick)
	}
	s.mu.Lock()
	if s.revealed[k] { // revealed meanwhile
		s.mu.Unlock()
		c.fail("exercise", "the teacher has already revealed %q", x.ID)
		return
	}
	c.stu.answers[k] = a
	s.version++
	s.mu.Unlock()
	c.queue(map[string]any{"type": "ack", "lab": l.Name, "exercise": x.ID, "value": raw})
	s.touch()
}

// originalChoice maps a choice as a student saw it to the lab's own order.
func originalChoice(x *lab.Exercise, in *lab.Instance, pick int) int {
	if pick < 1 || pick > len(in.Choices) {
		return 0
	}
	shown := in.Choices[pick-1]
	base, err := x.Instance(context.Background(), 0)
	if err != nil {
		return 0
	}
	for i, ch := range base.Choices {
		if ch == shown {
			return i + 1
		}
	}
	return 0
}

// touch tells every teacher page that the state changed.
func (s *Server) touch() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t := range s.teachers {
		select {
		case t.dirty <- struct{}{}:
		default:
		}
	}
}

func (c *conn) teacherMessage(m *message) {
	s := c.s
	switch m.Type {
	case "watch":
		if s.cat.Lab(m.Lab) == nil {
			c.fail("lab", "no lab %q", m.Lab)
			return
		}
		s.mu.Lock()
		c.watch = m.Lab
		s.mu.Unlock()
		select {
		case c.dirty <- struct{}{}:
		default:
		}
	case "reveal", "reset":
		l, x, field := s.exercise(m.Lab, m.Exercise, c.lang)
		if field != "" {
			c.fail(field, "no %s %q", field, map[string]string{"lab": m.Lab, "exercise": m.Exercise}[field])
			return
		}
		k := exKey{l.Name, x.ID}
		if m.Type == "reveal" {
			s.reveal(k)
		} else {
			s.reset(k)
		}
	default:
		c.fail("type", "unknown message type %q (watch, reveal, reset)", m.Type)
	}
}

// Reveal is what a student receives when the teacher reveals an exercise:
// the exercise with that student's numbers, its answer, and how their own
// prediction fared.
type Reveal struct {
	Type     string        `json:"type"`
	Lab      string        `json:"lab"`
	Exercise *lab.Instance `json:"exercise"`
	Yours    *Yours        `json:"yours"`
}

// Yours is a student's own prediction, judged.
type Yours struct {
	Value string `json:"value"`
	OK    bool   `json:"ok"`
}

func (s *Server) revealFor(stu *student, k exKey, lang string) *Reveal {
	l, x, _ := s.exercise(k.Lab, k.ID, lang)
	if x == nil {
		return nil
	}
	in, err := s.cat.Instance(s.ctx, x, stu.seed)
	if err != nil {
		return nil
	}
	r := &Reveal{Type: "reveal", Lab: l.Name, Exercise: in}
	s.mu.Lock()
	a, ok := stu.answers[k]
	s.mu.Unlock()
	if ok {
		r.Yours = &Yours{Value: a.Raw, OK: a.Hit || in.Kind == "explain"}
	}
	return r
}

func (s *Server) reveal(k exKey) {
	s.mu.Lock()
	if s.revealed[k] {
		s.mu.Unlock()
		return
	}
	s.revealed[k] = true
	s.version++
	var targets []*conn
	for c := range s.conns {
		if !c.teacher && c.stu != nil {
			targets = append(targets, c)
		}
	}
	s.mu.Unlock()
	for _, c := range targets {
		if r := s.revealFor(c.stu, k, c.lang); r != nil {
			c.queue(r)
		}
	}
	s.touch()
}

func (s *Server) reset(k exKey) {
	s.mu.Lock()
	delete(s.revealed, k)
	for _, stu := range s.order {
		delete(stu.answers, k)
	}
	s.version++
	var targets []*conn
	for c := range s.conns {
		if !c.teacher && c.stu != nil {
			targets = append(targets, c)
		}
	}
	s.mu.Unlock()
	for _, c := range targets {
		c.queue(map[string]string{"type": "reset", "lab": k.Lab, "exercise": k.ID})
	}
	s.touch()
}

// State is what a teacher's page receives: the class and the watched lab's
// exercises with their histograms. Answers appear only once revealed.
type State struct {
	Type       string       `json:"type"`
	Version    uint64       `json:"version"`
	Students   int          `json:"students"`
	Names      []string     `json:"names"`
	Online     int          `json:"online"`
	PerStudent bool         `json:"per_student"`
	Seed       uint64       `json:"seed"`
	Labs       []LabSummary `json:"labs"`
	Lab        string       `json:"lab"`
	Exercises  []ExState    `json:"exercises"`
}

// LabSummary names a lab and counts its answers.
type LabSummary struct {
	Name     string `json:"name"`
	Title    string `json:"title"`
	Answers  int    `json:"answers"`
	Revealed int    `json:"revealed"`
}

// ExState is one exercise on the teacher's page.
type ExState struct {
	ID        string        `json:"id"`
	Kind      string        `json:"kind"`
	Title     string        `json:"title,omitempty"`
	Question  string        `json:"question"`
	Choices   []string      `json:"choices,omitempty"`
	Histogram Histogram     `json:"histogram"`
	Revealed  bool          `json:"revealed"`
	Answer    *lab.Instance `json:"answer,omitempty"` // the class seed's instance, once revealed
	Right     int           `json:"right"`            // once revealed: predictions within tolerance / right choice
}

func (s *Server) snapshot(c *conn) *State {
	s.mu.Lock()
	st := &State{Type: "state", Version: s.version, Students: len(s.order), PerStudent: s.opt.PerStudent, Seed: s.opt.Seed,
		Names: []string{}, Exercises: []ExState{}}
	for _, stu := range s.order {
		st.Names = append(st.Names, stu.name)
	}
	online := map[*student]bool{}
	for cc := range s.conns {
		if cc.stu != nil {
			online[cc.stu] = true
		}
	}
	st.Online = len(online)
	watch := c.watch
	counts := map[exKey]int{}
	for _, stu := range s.order {
		for k := range stu.answers {
			counts[k]++
		}
	}
	for _, l := range s.cat.Labs {
		sum := LabSummary{Name: l.Name, Title: l.Title[c.lang]}
		if sum.Title == "" {
			sum.Title = l.Title["en"]
		}
		for _, id := range l.IDs() {
			k := exKey{l.Name, id}
			sum.Answers += counts[k]
			if s.revealed[k] {
				sum.Revealed++
			}
		}
		st.Labs = append(st.Labs, sum)
		if watch == "" && sum.Answers > 0 {
			watch = l.Name
		}
	}
	if watch == "" && len(s.cat.Labs) > 0 {
		watch = s.cat.Labs[0].Name
	}
	st.Lab = watch
	l := s.cat.Lab(watch)
	type collected struct {
		vals  []float64
		picks []int
		texts []string
		right int
	}
	col := map[string]*collected{}
	revealed := map[string]bool{}
	if l != nil {
		for _, id := range l.IDs() {
			k := exKey{l.Name, id}
			revealed[id] = s.revealed[k]
			cl := &collected{}
			col[id] = cl
			for i := len(s.order) - 1; i >= 0; i-- { // latest joiners first
				a, ok := s.order[i].answers[k]
				if !ok {
					continue
				}
				if a.Hit {
					cl.right++
				}
				switch {
				case a.Text != "":
					cl.texts = append(cl.texts, a.Text)
				case a.Pick > 0:
					cl.picks = append(cl.picks, a.Orig)
				default:
					if s.opt.PerStudent {
						cl.vals = append(cl.vals, a.Rel)
					} else {
						cl.vals = append(cl.vals, a.Value)
					}
				}
			}
		}
	}
	s.mu.Unlock()
	if l == nil {
		return st
	}
	for _, x := range l.list(c.lang) {
		in, err := s.cat.Instance(s.ctx, x, s.opt.Seed)
		if err != nil {
			continue
		}
		cl := col[x.ID]
		e := ExState{ID: x.ID, Kind: x.Kind, Title: in.Title, Question: in.Question, Revealed: revealed[x.ID]}
		switch x.Kind {
		case "number":
			e.Histogram = NumberHistogram(cl.vals, s.lim.Bins)
			e.Histogram.Relative = s.opt.PerStudent
			e.Histogram.Unit = in.Unit
			if s.opt.PerStudent {
				e.Histogram.Unit = "%"
			}
		case "choice":
			base, err := s.cat.Instance(s.ctx, x, 0)
			if err != nil {
				continue
			}
			e.Choices = base.Choices
			e.Histogram = Histogram{Kind: "choice", Count: len(cl.picks), Labels: base.Choices, Counts: make([]int, len(base.Choices))}
			for _, p := range cl.picks {
				if p >= 1 && p <= len(e.Histogram.Counts) {
					e.Histogram.Counts[p-1]++
				}
			}
		case "explain":
			e.Histogram = Histogram{Kind: "explain", Count: len(cl.texts), Counts: []int{}}
			n := min(len(cl.texts), s.lim.Texts)
			e.Histogram.Texts = cl.texts[:n]
			e.Histogram.More = len(cl.texts) - n
		}
		if e.Revealed {
			e.Answer = in
			if x.Kind == "choice" {
				base, _ := s.cat.Instance(s.ctx, x, 0)
				e.Answer = base
			}
			e.Right = cl.right
		}
		st.Exercises = append(st.Exercises, e)
	}
	return st
}
