package lab

import (
	"context"
	"strings"
	"testing"
)

// chainLab is a block with three tiers and a variant that changes two of
// them; its expectations read hops and tiers by name.
const chainLab = `+++
title = "T"
+++

` + "```sim {id=\"stack\"}" + `
load = "closed"
concurrency = 10
duration = "2s"
requests = 0
tls = "none"
dns = "0s"
rtt = "0.05ms"
loopback = true
expect = [
  "off.hop.app.connects == off.requests",
  "off.hop.redis.time_wait_client == off.requests",
  "off.hop.redis.time_wait_server == 0",
  "on.hop.app.time_wait_server == 0",
  "on.tier.app.utilisation > 0.9",
  "on.throughput_rps > off.throughput_rps",
]

[[tier]]
name = "nginx"
workers = 2
threads = 0
server_time = "0.05ms"
reuse = "none"

[[tier]]
name = "app"
workers = 1
threads = 4
server_time = "0.5ms"
server_conn_time = "0.1ms"
reuse = "request"
calls_per_request = 2

[[tier]]
name = "redis"
threads = 0
server_time = "0.02ms"
keepalive_timeout = "0s"

[[variant]]
name = "off"

[[variant]]
name = "on"
tier.nginx.reuse = "upstream-keepalive"
tier.nginx.upstream_keepalive = 8
tier.app.reuse = "pool"
` + "```\n"

func TestChainBlock(t *testing.T) {
	l, err := Parse("chain.md", []byte(chainLab))
	if err != nil {
		t.Fatal(err)
	}
	b := l.Blocks[0]
	if strings.Join(b.Tiers, ",") != "nginx,app,redis" {
		t.Fatalf("tiers %v", b.Tiers)
	}
	// Settings keep their lines: the app's threads are on line 33.
	for _, st := range b.Base {
		if st.Key == "tier.app.threads" && st.Line != 33 {
			t.Errorf("tier.app.threads on line %d", st.Line)
		}
	}
	if v := b.Variant("on"); len(v.Settings) != 3 || v.Settings[0].Key != "tier.nginx.reuse" || v.Settings[0].Line != 50 {
		t.Errorf("variant settings %+v", v.Settings)
	}
	res, err := l.Run(context.Background(), nil, RunOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range res[0].Checks {
		if !c.OK {
			t.Errorf("%s: got %s", c.Expect, c.Got)
		}
	}
	// --set reaches a tier's key in every variant.
	st, err := ParseSetting("tier.app.threads=1")
	if err != nil || st.Key != "tier.app.threads" {
		t.Fatalf("ParseSetting: %+v, %v", st, err)
	}
	res2, err := l.Run(context.Background(), nil, RunOptions{Seed: 1, Set: []Setting{st}})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := res2[0].Variants[0].Summary.ThroughputRPS, res[0].Variants[0].Summary.ThroughputRPS; a >= b {
		t.Errorf("one thread: %.0f req/s, four: %.0f", a, b)
	}
	if st, err := ParseSetting("tier.app.reuse=pool"); err != nil || st.Value != "pool" {
		t.Errorf("ParseSetting(tier.app.reuse=pool) = %+v, %v", st, err)
	}
	for _, kv := range []string{"tier.app.workers=0", "tier.app.rate=5", "tier.app=1"} {
		if _, err := ParseSetting(kv); err == nil || !strings.HasPrefix(err.Error(), "--set") {
			t.Errorf("ParseSetting(%q) = %v", kv, err)
		}
	}
}

// TestChainBadInput: mistakes in tiers name the file, the line and the key.
func TestChainBadInput(t *testing.T) {
	block := func(body string) string {
		return "```sim {id=\"b\"}\ntls = \"none\"\ndns = \"0s\"\n" + body + "\n```\n"
	}
	// The TOML body starts on line 2; body lines from line 4.
	checkBadLabs(t, []badLab{
		{"no name", block("[[tier]]\nworkers = 2"), []string{"bad.md:4:", "needs a name"}},
		{"bad name", block("[[tier]]\nname = \"App\""), []string{"bad.md:5:", "App"}},
		{"twice", block("[[tier]]\nname = \"a\"\n[[tier]]\nname = \"a\""), []string{"bad.md:7:", "two tiers"}},
		{"bad value", block("[[tier]]\nname = \"a\"\nworkers = -1"), []string{"bad.md:6:", "tier.a.workers", "out of range"}},
		{"block key in a tier", block("[[tier]]\nname = \"a\"\nconcurrency = 3"), []string{"bad.md:6:", "tier.a.concurrency", "on the block"}},
		{"unknown tier in a variant", block("[[tier]]\nname = \"a\"\n[[variant]]\nname = \"v\"\ntier.b.workers = 2"), []string{"bad.md:8:", `no tier named "b"`}},
		{"tier table in a variant", block("[[tier]]\nname = \"a\"\n[[variant]]\nname = \"v\"\ntier = 3"), []string{"bad.md:8:", "tier.NAME.KEY"}},
		{"not a table", block("tier = 3"), []string{"bad.md:4:", "[[tier]]"}},
		{"TLS", "```sim {id=\"b\"}\ndns = \"0s\"\n[[tier]]\nname = \"a\"\n```\n", []string{"bad.md:", "tls"}},
		{"nine tiers", block("[[tier]]\nname = \"a\"\n[[tier]]\nname = \"b\"\n[[tier]]\nname = \"c\"\n[[tier]]\nname = \"d\"\n[[tier]]\nname = \"e\"\n" +
			"[[tier]]\nname = \"f\"\n[[tier]]\nname = \"g\"\n[[tier]]\nname = \"h\"\n[[tier]]\nname = \"i\""), []string{"bad.md:21:", "at most 8 tiers"}},
		{"0-RTT into a server without it", block("[[tier]]\nname = \"app\"\nsoftware = \"gunicorn\"\ntls = \"1.3\"\ntls_resume = true\nearly_data = true"),
			[]string{"bad.md:", "tier.app.early_data", "no 0-RTT"}},
		{"unknown metric", block("expect = [\"hop.a.conects == 1\"]\n[[tier]]\nname = \"a\""), []string{"bad.md:4:", "hop.a.conects"}},
	})
}
