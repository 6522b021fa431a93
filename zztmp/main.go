package main

import (
	"context"
	"fmt"
	"os/exec"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"
)

func med(d []time.Duration) time.Duration { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }); return d[len(d)/2] }

func main() {
	cmd := exec.Command("redis-server", "--port", "16399", "--save", "", "--appendonly", "no")
	cmd.Start()
	defer cmd.Process.Kill()
	time.Sleep(300 * time.Millisecond)
	ctx := context.Background()
	var newc, reused, dial []time.Duration
	for i := 0; i < 300; i++ {
		t0 := time.Now()
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:16399"})
		c.Set(ctx, "k", "v", 0)
		t1 := time.Now()
		c.Get(ctx, "k")
		t2 := time.Now()
		c.Close()
		if i > 20 {
			newc = append(newc, t1.Sub(t0))
			reused = append(reused, t2.Sub(t1))
		}
	}
	for i := 0; i < 300; i++ {
		t0 := time.Now()
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:16399", Protocol: 2, DisableIndentity: true})
		c.Set(ctx, "k", "v", 0)
		dial = append(dial, time.Since(t0))
		c.Close()
	}
	fmt.Println("new client SET:", med(newc), "reused GET:", med(reused), "RESP2 no setinfo new SET:", med(dial))
}
