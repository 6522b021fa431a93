package measure

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// parseHAR reads log.entries. Each entry's timings are durations in ms,
// -1 where a phase did not apply; ssl is part of connect (HAR 1.2). A call
// opened a connection when it spent time connecting, or when its
// connection id appears for the first time (Chromium reports -1 for a
// connection opened before the request, by a preconnect); otherwise it
// reused one.
func parseHAR(data []byte, lim Limits) ([]Call, error) {
	top := reader{format: HAR}
	var doc fields
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, top.err("", "not a JSON object: %v", err)
	}
	logObj, ok := object(doc["log"])
	if !ok {
		return nil, top.err("log", "%s where an object belongs", kind(doc["log"]))
	}
	rawEntries := bytes.TrimSpace(logObj["entries"])
	if len(rawEntries) == 0 {
		return nil, top.err("log.entries", "missing")
	}
	if rawEntries[0] != '[' {
		return nil, top.err("log.entries", "%s where an array belongs", kind(rawEntries))
	}
	// The entries one at a time, so that a bad one is named by its index
	// and a huge array stops at the limit.
	dec := json.NewDecoder(bytes.NewReader(rawEntries))
	dec.UseNumber()
	if _, err := dec.Token(); err != nil {
		return nil, top.err("log.entries", "%v", err)
	}
	seen := map[string]bool{}
	var calls []Call
	for i := 0; dec.More(); i++ {
		r := reader{format: HAR, where: fmt.Sprintf("entry %d", i)}
		if i >= lim.MaxCalls {
			return nil, tooMany(HAR, r.where, lim)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, r.err("", "%v", err)
		}
		c, err := harEntry(r, raw, seen)
		if err != nil {
			return nil, err
		}
		calls = append(calls, c)
	}
	if len(calls) == 0 {
		return nil, top.err("log.entries", "empty: no calls to read")
	}
	return calls, nil
}

func harEntry(r reader, raw json.RawMessage, seen map[string]bool) (Call, error) {
	c := Call{Source: r.where}
	e, ok := object(raw)
	if !ok {
		return c, r.err("", "%s where an object belongs", kind(raw))
	}
	started, _, err := r.string(e, "startedDateTime", "startedDateTime", true)
	if err != nil {
		return c, err
	}
	if c.Start, err = time.Parse(time.RFC3339Nano, started); err != nil {
		return c, r.err("startedDateTime", "%q is not an ISO 8601 date and time", clip(started))
	}
	c.HasStart = true
	req, ok := object(e["request"])
	if !ok {
		if e["request"] == nil {
			return c, r.err("request", "missing")
		}
		return c, r.err("request", "%s where an object belongs", kind(e["request"]))
	}
	if c.URL, _, err = r.string(req, "url", "request.url", true); err != nil {
		return c, err
	}
	if c.Host, err = r.host(c.URL, "request.url"); err != nil {
		return c, err
	}
	total, _, err := r.number(e, "time", "time", true)
	if err != nil {
		return c, err
	}
	if total < 0 {
		return c, r.err("time", "%v is negative", total)
	}
	tm, ok := object(e["timings"])
	if !ok {
		if e["timings"] == nil {
			return c, r.err("timings", "missing")
		}
		return c, r.err("timings", "%s where an object belongs", kind(e["timings"]))
	}
	// blocked, dns, connect and ssl may be missing or -1 (not applicable);
	// send, wait and receive are required and never -1.
	var v [7]float64
	for k, name := range []string{"blocked", "dns", "connect", "ssl", "send", "wait", "receive"} {
		optional := k < 4
		x, present, err := r.number(tm, name, "timings."+name, !optional)
		if err != nil {
			return c, err
		}
		switch {
		case !present || (optional && x == -1):
			x = -1
		case x < 0:
			if optional {
				return c, r.err("timings."+name, "%v is negative (only -1, not applicable, is allowed)", x)
			}
			return c, r.err("timings."+name, "%v is negative", x)
		}
		v[k] = x
	}
	pos := func(x float64) float64 { return math.Max(x, 0) }
	blocked, dns, connect, ssl, send, wait, receive := pos(v[0]), pos(v[1]), pos(v[2]), pos(v[3]), v[4], v[5], v[6]
	c.DNS = dns
	c.TLS = math.Min(ssl, connect)
	c.TCP = connect - c.TLS
	c.NameLookup = blocked + dns
	c.Connect = c.NameLookup + c.TCP
	c.AppConnect = c.Connect + c.TLS
	c.StartTransfer = c.AppConnect + send + wait
	c.Total = math.Max(total, c.StartTransfer+receive)
	if id, present, err := r.string(e, "connection", "connection", false); err != nil {
		return c, err
	} else if present && id != "" {
		c.ConnID = id
	}
	key := c.Host + " " + c.ConnID
	c.NewConn = connect > 0 || dns > 0 || ssl > 0 || (c.ConnID != "" && !seen[key])
	if c.ConnID != "" {
		seen[key] = true
	}
	return c, nil
}
