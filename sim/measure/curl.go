package measure

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"strconv"
)

// lines calls fn with each non-blank line of data and its number (from 1).
func lines(data []byte, fn func(n int, line []byte) error) error {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf"))
		}
		if len(line) == 0 {
			continue
		}
		if err := fn(n, line); err != nil {
			return err
		}
	}
	return sc.Err()
}

// parseCurl reads curl's -w '%{json}' lines: times in seconds, each from
// the transfer's start; num_connects is how many connections the transfer
// opened (0: it reused one). curl gives no start time.
func parseCurl(data []byte, lim Limits) ([]Call, error) {
	var calls []Call
	err := lines(data, func(n int, line []byte) error {
		r := reader{format: Curl, where: fmt.Sprintf("line %d", n)}
		if len(calls) >= lim.MaxCalls {
			return tooMany(Curl, r.where, lim)
		}
		m, ok := object(line)
		if !ok {
			return r.err("", "not a JSON object")
		}
		c := Call{Source: r.where}
		var err error
		if c.URL, _, err = r.string(m, "url_effective", "url_effective", true); err != nil {
			return err
		}
		if c.Host, err = r.host(c.URL, "url_effective"); err != nil {
			return err
		}
		var t [5]float64
		for k, name := range []string{"time_namelookup", "time_connect", "time_appconnect", "time_starttransfer", "time_total"} {
			x, _, err := r.number(m, name, name, true)
			if err != nil {
				return err
			}
			if x < 0 {
				return r.err(name, "%v is negative", x)
			}
			t[k] = x * 1000
		}
		conns, _, err := r.number(m, "num_connects", "num_connects", true)
		if err != nil {
			return err
		}
		if conns < 0 || conns != math.Trunc(conns) {
			return r.err("num_connects", "%v is not a count", conns)
		}
		if id, present, err := r.number(m, "conn_id", "conn_id", false); err != nil {
			return err
		} else if present && id >= 0 {
			c.ConnID = strconv.FormatFloat(id, 'f', -1, 64)
		}
		c.NewConn = conns > 0
		// curl says 0 for a phase it did not go through (connect and
		// appconnect on a reused connection, appconnect without TLS):
		// each time is at least the one before.
		c.NameLookup = t[0]
		c.Connect = math.Max(t[1], c.NameLookup)
		c.AppConnect = math.Max(t[2], c.Connect)
		c.StartTransfer = math.Max(t[3], c.AppConnect)
		c.Total = math.Max(t[4], c.StartTransfer)
		if c.NewConn {
			c.DNS = c.NameLookup
			c.TCP = c.Connect - c.NameLookup
			c.TLS = c.AppConnect - c.Connect
		}
		calls = append(calls, c)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(calls) == 0 {
		return nil, &Error{Format: Curl, Msg: "empty: no calls to read"}
	}
	return calls, nil
}
