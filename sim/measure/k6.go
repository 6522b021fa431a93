package measure

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// k6Metrics are the points of one HTTP request that k6 --out json writes,
// in the order Call's phases take them.
var k6Metrics = []string{
	"http_req_blocked", "http_req_connecting", "http_req_tls_handshaking",
	"http_req_sending", "http_req_waiting", "http_req_receiving", "http_req_duration",
}

// k6Req is one request's points, gathered.
type k6Req struct {
	line  int // the first point's line
	url   string
	at    time.Time
	v     [7]float64
	found [7]bool
}

// parseK6 reads k6's --out json lines. The points of one request share
// their time and tags; other metrics are skipped. k6 stamps a request's
// points when it ends, so the call started blocked + connecting +
// tls_handshaking + duration earlier. k6 counts the DNS lookup in
// http_req_blocked, so the setup is connecting + tls_handshaking.
func parseK6(data []byte, lim Limits) ([]Call, error) {
	byKey := map[string]*k6Req{}
	var order []*k6Req
	err := lines(data, func(n int, line []byte) error {
		r := reader{format: K6, where: fmt.Sprintf("line %d", n)}
		m, ok := object(line)
		if !ok {
			return r.err("", "not a JSON object")
		}
		typ, _, err := r.string(m, "type", "type", true)
		if err != nil || typ != "Point" {
			return err
		}
		metric, _, err := r.string(m, "metric", "metric", true)
		if err != nil {
			return err
		}
		k := slices.Index(k6Metrics, metric)
		if k < 0 {
			return nil
		}
		d, ok := object(m["data"])
		if !ok {
			if m["data"] == nil {
				return r.err("data", "missing")
			}
			return r.err("data", "%s where an object belongs", kind(m["data"]))
		}
		stamp, _, err := r.string(d, "time", "data.time", true)
		if err != nil {
			return err
		}
		at, err := time.Parse(time.RFC3339Nano, stamp)
		if err != nil {
			return r.err("data.time", "%q is not an RFC 3339 time", clip(stamp))
		}
		v, _, err := r.number(d, "value", "data.value", true)
		if err != nil {
			return err
		}
		if v < 0 {
			return r.err("data.value", "%v is negative", v)
		}
		var tags map[string]string
		if raw := d["tags"]; raw == nil || json.Unmarshal(raw, &tags) != nil || tags == nil {
			if raw == nil {
				return r.err("data.tags", "missing")
			}
			return r.err("data.tags", "%s where an object of strings belongs", kind(raw))
		}
		u, ok := tags["url"]
		if !ok {
			return r.err("data.tags.url", "missing")
		}
		key := groupKey(stamp, tags)
		q := byKey[key]
		if q == nil {
			if len(order) >= lim.MaxCalls {
				return tooMany(K6, r.where, lim)
			}
			q = &k6Req{line: n, url: u, at: at}
			byKey[key] = q
			order = append(order, q)
		}
		if q.found[k] {
			return r.err("metric", "a second %s point for the request of line %d (same time and tags)", metric, q.line)
		}
		q.v[k], q.found[k] = v, true
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(order) == 0 {
		return nil, &Error{Format: K6, Msg: "no http_req_* points: no calls to read"}
	}
	calls := make([]Call, 0, len(order))
	for _, q := range order {
		r := reader{format: K6, where: fmt.Sprintf("line %d", q.line)}
		for k, ok := range q.found {
			if !ok {
				return nil, r.err("metric", "the request has no %s point (same time and tags)", k6Metrics[k])
			}
		}
		c := Call{URL: q.url, Source: r.where, HasStart: true}
		if c.Host, err = r.host(q.url, "data.tags.url"); err != nil {
			return nil, err
		}
		blocked, connecting, tls, sending, waiting, receiving, duration := q.v[0], q.v[1], q.v[2], q.v[3], q.v[4], q.v[5], q.v[6]
		c.NameLookup = blocked
		c.Connect = blocked + connecting
		c.AppConnect = c.Connect + tls
		c.StartTransfer = c.AppConnect + sending + waiting
		// http_req_duration is sending + waiting + receiving; a file
		// that says less keeps its phases in order.
		c.Total = c.AppConnect + max(duration, sending+waiting+receiving)
		c.TCP, c.TLS = connecting, tls
		c.NewConn = connecting > 0
		c.Start = q.at.Add(-time.Duration(c.Total * float64(time.Millisecond)))
		calls = append(calls, c)
	}
	return calls, nil
}

// groupKey is a point's time and its tags, sorted.
func groupKey(stamp string, tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString(stamp)
	for _, k := range keys {
		fmt.Fprintf(&b, "\x00%s\x00%s", k, tags[k])
	}
	return b.String()
}
