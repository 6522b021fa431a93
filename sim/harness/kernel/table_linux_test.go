package kernel

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOwnTable: a process started as a lab process is (private network
// namespace, OwnTableEnv) re-executes itself into a namespace with a TCP
// table of TableBuckets buckets, and SetUpOwnTable gives it the host
// table's limits, which a table's size would otherwise change.
func TestOwnTable(t *testing.T) {
	if os.Getenv("CONNLAB_OWNTABLE_CHILD") != "" {
		ownTableChild(t)
		return
	}
	inPrivateNamespace(t, "TestOwnTable", "CONNLAB_OWNTABLE_CHILD=1", OwnTableEnv())
}

func ownTableChild(t *testing.T) {
	if err := ExecOwnTable(); err != nil { // returns only when it did not execute
		t.Skipf("no table of its own: %v", err)
	}
	limits := strings.Fields(os.Getenv(tableLimitsEnv))
	if len(limits) != len(tableLimits) {
		t.Fatalf("%s = %q after ExecOwnTable, want the host table's %d limits", tableLimitsEnv, os.Getenv(tableLimitsEnv), len(tableLimits))
	}
	n, err := SetUpOwnTable()
	if err != nil {
		t.Fatal(err)
	}
	if n != TableBuckets {
		t.Errorf("SetUpOwnTable: %d buckets, want %d", n, TableBuckets)
	}
	for i, name := range tableLimits {
		b, err := os.ReadFile("/proc/sys/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(b)); got != limits[i] {
			t.Errorf("%s = %s, want the host table's %s", name, got, limits[i])
		}
	}
	if _, err := strconv.Atoi(limits[0]); err != nil {
		t.Errorf("tcp_max_tw_buckets %q: %v", limits[0], err)
	}
	start := time.Now()
	if _, err := os.ReadFile("/proc/self/net/tcp"); err != nil {
		t.Fatal(err)
	}
	t.Logf("own table: %d buckets; reading /proc/self/net/tcp took %v", n, time.Since(start))
}
