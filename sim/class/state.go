package class

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/connlab/connlab/sim/lab"
)

// Limits bound what one class may hold and what one connection or one
// machine may do. The per-address limits count per machine as its address
// tells (addrKey, addr.go): every loopback address is one machine, an IPv6
// address outside the server's own /64 counts by its /64, an IPv4 address
// is itself.
type Limits struct {
	MaxStudents int     // students who may join (default 300)
	MaxName     int     // runes in a display name (default 32)
	MaxText     int     // bytes of an explain answer (default 1000)
	MaxMessage  int64   // bytes of one WebSocket message (default 4096)
	Rate        float64 // messages per second a connection may keep up (default 5)
	Burst       int     // messages a connection may send at once (default 20)
	Strikes     int     // refused messages before the connection is closed (default 50)
	MaxTeachers int     // teacher pages open at once (default 8)
	MaxConns    int     // student connections open at once (default 2 × MaxStudents)
	Bins        int     // histogram bins of a number (default 10)
	Texts       int     // explain answers shown per exercise (default 40)

	PerAddress      int           // students who may join from one machine (default 4)
	ConnsPerAddress int           // student connections open from one machine (default 4 × PerAddress)
	JoinTries       int           // join messages one connection may send (default 5)
	WrongCodes      int           // wrong join codes one machine may try a minute (default 10)
	WrongCodesClass int           // wrong join codes the class takes a minute before new students wait (default 6 × WrongCodes)
	JoinWait        time.Duration // a student connection that has not joined by then is closed (default 30 s)
}

// DefaultLimits are the limits of a class of 300.
var DefaultLimits = Limits{MaxStudents: 300, MaxName: 32, MaxText: 1000, MaxMessage: 4096, Rate: 5, Burst: 20,
	Strikes: 50, MaxTeachers: 8, Bins: 10, Texts: 40,
	PerAddress: 4, JoinTries: 5, WrongCodes: 10, JoinWait: 30 * time.Second}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxStudents > 0 {
		d.MaxStudents = l.MaxStudents
	}
	if l.MaxName > 0 {
		d.MaxName = l.MaxName
	}
	if l.MaxText > 0 {
		d.MaxText = l.MaxText
	}
	if l.MaxMessage > 0 {
		d.MaxMessage = l.MaxMessage
	}
	if l.Rate > 0 {
		d.Rate = l.Rate
	}
	if l.Burst > 0 {
		d.Burst = l.Burst
	}
	if l.Strikes > 0 {
		d.Strikes = l.Strikes
	}
	if l.MaxTeachers > 0 {
		d.MaxTeachers = l.MaxTeachers
	}
	if l.Bins > 0 {
		d.Bins = l.Bins
	}
	if l.Texts > 0 {
		d.Texts = l.Texts
	}
	if l.PerAddress > 0 {
		d.PerAddress = l.PerAddress
	}
	if l.JoinTries > 0 {
		d.JoinTries = l.JoinTries
	}
	if l.WrongCodes > 0 {
		d.WrongCodes = l.WrongCodes
	}
	if l.JoinWait > 0 {
		d.JoinWait = l.JoinWait
	}
	d.MaxConns = l.MaxConns
	if d.MaxConns <= 0 {
		d.MaxConns = 2 * d.MaxStudents
	}
	d.WrongCodesClass = l.WrongCodesClass
	if d.WrongCodesClass <= 0 {
		d.WrongCodesClass = 6 * d.WrongCodes
	}
	d.ConnsPerAddress = l.ConnsPerAddress
	if d.ConnsPerAddress <= 0 {
		d.ConnsPerAddress = 4 * d.PerAddress
	}
	return d
}

// SanitizeName turns what a student typed into a display name: control and
// formatting characters (bidi overrides, zero-width joiners) removed, runs
// of spaces collapsed, at most max runes. An empty result is an error.
func SanitizeName(s string, max int) (string, error) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "")
	}
	var b strings.Builder
	space := false
	n := 0
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.IsControl(r), unicode.In(r, unicode.Cf, unicode.Co, unicode.Cs), r == utf8.RuneError:
			continue
		case !unicode.IsPrint(r) && !unicode.IsMark(r):
			continue
		}
		if n >= max {
			break
		}
		if space {
			if n+1 >= max {
				break
			}
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
	}
	out := b.String()
	if out == "" {
		return "", fmt.Errorf("write a display name (1 to %d characters)", max)
	}
	return out, nil
}

// exKey names an exercise in a class.
type exKey struct{ Lab, ID string }

// An answer is one student's latest prediction for an exercise.
type answer struct {
	Raw   string
	Value float64 // number
	Rel   float64 // number, per-student seeds: % of the student's own answer
	Hit   bool    // within tolerance of the student's own answer
	Known bool    // Hit was computed
	Pick  int     // choice: 1-based number of the choice as the student saw it
	Orig  int     // choice: 1-based number in the lab's own order
	Text  string  // explain
}

type student struct {
	name    string
	token   string
	addr    string // the remote address it joined from
	seed    uint64
	answers map[exKey]answer
}

// RandomSeed picks a seed, 1 to 2^31: a class's or a student's.
func RandomSeed() uint64 {
	var b [4]byte
	rand.Read(b[:])
	return uint64(b[0])<<23 | uint64(b[1])<<15 | uint64(b[2])<<7 | uint64(b[3]>>1) + 1
}

func newToken() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// codeAlphabet has no letters or digits that read alike (0 O, 1 I L, 5 S,
// 2 Z, 8 B), so a code copied from a projected page is typed right.
const codeAlphabet = "ACDEFGHJKMNPQRTUVWXY345679"

// CodeLen is the length of a random join code.
const CodeLen = 6

// NewCode picks a random join code of CodeLen letters and digits.
func NewCode() string {
	b := make([]byte, CodeLen)
	rand.Read(b)
	for i := range b {
		b[i] = codeAlphabet[int(b[i])%len(codeAlphabet)]
	}
	return string(b)
}

// NormalizeCode reads a join code as a student may type it: case,
// spaces and dashes do not matter. A code is 4 to 16 letters and digits.
func NormalizeCode(s string) (string, error) {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == ' ' || r == '-':
		case r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			b.WriteRune(unicode.ToUpper(r))
		default:
			return "", fmt.Errorf("a join code has letters and digits only")
		}
		if b.Len() > 16 {
			return "", fmt.Errorf("a join code has at most 16 letters and digits")
		}
	}
	if b.Len() < 4 {
		return "", fmt.Errorf("a join code has at least 4 letters and digits")
	}
	return b.String(), nil
}

// relative is a prediction as a percentage of the right answer, kept within
// ±1000 % so the histogram stays readable.
func relative(guess, ans float64) float64 {
	var r float64
	switch {
	case ans == 0 && guess == 0:
		r = 100
	case ans == 0:
		r = math.Copysign(1000, guess)
	default:
		r = guess / ans * 100
	}
	return math.Max(-1000, math.Min(1000, math.Round(r*10)/10))
}

// judge records what a student's input means for an exercise instance.
func judge(in *lab.Instance, raw string, maxText int) (answer, error) {
	a := answer{Raw: raw}
	switch in.Kind {
	case "explain":
		t := strings.TrimSpace(strings.ToValidUTF8(raw, ""))
		if t == "" {
			return a, fmt.Errorf("write your explanation first")
		}
		if len(t) > maxText {
			return a, fmt.Errorf("at most %d bytes", maxText)
		}
		a.Text = t
		return a, nil
	case "number":
		f, err := lab.ParseNumber(raw, in.Unit)
		if err != nil {
			return a, err
		}
		if math.Abs(f) > 1e15 {
			return a, fmt.Errorf("want a number below 10^15")
		}
		a.Value = f
	}
	v, err := in.Check(raw)
	if err != nil {
		return a, err
	}
	a.Pick = v.Choice
	return a, nil
}
