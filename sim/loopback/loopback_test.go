package loopback

import "testing"

func TestRule(t *testing.T) {
	for _, tc := range []struct {
		addr       string
		isIP, host bool
	}{
		{"127.0.0.1:80", true, true},
		{"127.1.2.3", true, true},
		{"[::1]:8080", true, true},
		{"::1", true, true},
		{"[::ffff:127.0.0.1]:1", true, true},
		{"localhost:8080", false, true},
		{"LOCALHOST", false, true},
		{"10.0.0.1:80", false, false},
		{"0.0.0.0:80", false, false},
		{":8080", false, false},
		{"[fe80::1%lo]:80", false, false},
		{"example.com:443", false, false},
		{"", false, false},
	} {
		if got := IsIP(tc.addr); got != tc.isIP {
			t.Errorf("IsIP(%q) = %v, want %v", tc.addr, got, tc.isIP)
		}
		if got := IsHost(tc.addr); got != tc.host {
			t.Errorf("IsHost(%q) = %v, want %v", tc.addr, got, tc.host)
		}
		if err := Check(tc.addr); (err == nil) != tc.isIP {
			t.Errorf("Check(%q) = %v", tc.addr, err)
		}
	}
}
