package sim

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		set  func(s *Scenario)
		want string
	}{
		{func(s *Scenario) { s.Requests, s.Duration = 0, 0 }, "requests:"},
		{func(s *Scenario) { s.Load, s.Rate = "open", 0 }, "rate:"},
		{func(s *Scenario) { s.Load, s.Rate, s.Requests, s.Duration = "open", 1e6, 0, time.Hour }, "duration:"},
		{func(s *Scenario) { s.EarlyData = true; s.TLS = "1.2" }, "early_data:"},
		{func(s *Scenario) { s.Reuse = "process"; s.ShareSets = [][]string{{"dns", "COOKIE"}} }, "CURL_LOCK_DATA_COOKIE"},
		{func(s *Scenario) { s.Reuse = "process"; s.ShareSets = [][]string{{}} }, "must not be empty"},
		{func(s *Scenario) { s.Reuse = "process"; s.ShareSets = [][]string{{"dns", "bogus"}} }, "only CURL_LOCK_DATA_"},
		{func(s *Scenario) { s.Reuse = "request"; s.ShareSets = [][]string{{"cookie"}} }, "CURL_LOCK_DATA_COOKIE"},
	} {
		s := Default()
		c.set(&s)
		err := s.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want error with %q, got %v", c.want, err)
		}
	}
	s := Default()
	if err := s.Validate(); err != nil {
		t.Errorf("default: %v", err)
	}
}

func TestSet(t *testing.T) {
	for _, c := range []struct {
		key  string
		v    any
		want string // "" = ok
	}{
		{"rtt", "30ms", ""},
		{"rtt", "-5ms", "rtt: -5ms is out of range"},
		{"rtt", int64(30), "want a duration with its unit"},
		{"rtt", "soon", "want a duration"},
		{"rtts", "30ms", `did you mean "rtt"`},
		{"requests", int64(-1), "out of range"},
		{"requests", int64(100_000_000), "out of range"},
		{"requests", 1.5, "whole number"},
		{"tls", 1.3, ""},
		{"tls", "1.1", "want one of none, 1.2, 1.3"},
		{"port_range", "100-50", "low <= high"},
		{"port_range", "1024-2047", ""},
		{"tw_reuse", int64(3), "out of range"},
		{"share_sets", []any{"dns", "connect"}, ""},
		{"share_sets", []any{[]any{"dns"}, []any{"connect"}}, ""},
		{"share_sets", []any{int64(1)}, "want a list of sets"},
		{"server_jitter", 2.0, "out of range"},
		{"early_data", "yes", "want true or false"},
	} {
		s := Default()
		err := s.Set(c.key, c.v)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("Set(%s, %v): %v", c.key, c.v, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("Set(%s, %v) = %v, want %q", c.key, c.v, err, c.want)
		}
		var pe *ParamError
		if err != nil && (!errors.As(err, &pe) || pe.Key != c.key) {
			t.Errorf("Set(%s): error %v does not name the key", c.key, err)
		}
	}
	// Get returns what Set accepts.
	s := Default()
	for _, p := range Params() {
		v, _ := s.Get(p.Key)
		if v != p.Default {
			t.Errorf("%s: Get %q, Default %q", p.Key, v, p.Default)
		}
	}
}

func TestShareMaskIsASet(t *testing.T) {
	a, _ := ShareMask([]string{"dns", "connect", "ssl_session"})
	b, _ := ShareMask([]string{"CURL_LOCK_DATA_SSL_SESSION", "connect", "DNS", "dns"})
	c, _ := ShareMask([]string{"dns"})
	if a != b || a == c {
		t.Errorf("masks %b %b %b", a, b, c)
	}
}

func TestTooManyRequests(t *testing.T) {
	s := base()
	s.RTT = 0
	s.Requests = 0
	s.Duration = time.Hour
	s.CallsPerRequest = 0 // answers in zero time: the closed loop never advances
	_, err := Run(context.Background(), s, Options{})
	if !errors.Is(err, ErrTooManyRequests) {
		t.Errorf("got %v, want ErrTooManyRequests", err)
	}
}

func TestCancel(t *testing.T) {
	s := base()
	s.Requests = 5_000_000
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, s, Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v", err)
	}
}
