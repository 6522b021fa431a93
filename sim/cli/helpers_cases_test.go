package cli

import (
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// A block's state as a link's query, both ways, as ../testdata/helpers.json
// lists it: the page reads and writes the same (site/helpers_ts_test.go).
func TestLinkQueryCases(t *testing.T) {
	raw, err := os.ReadFile("../testdata/helpers.json")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		LinkQuery []struct {
			Block string   `json:"block"`
			Set   []string `json:"set"`
			Seed  uint64   `json:"seed"`
			Query string   `json:"query"`
		} `json:"link_query"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.LinkQuery) < 5 {
		t.Fatalf("%d link cases", len(c.LinkQuery))
	}
	for _, x := range c.LinkQuery {
		if got := linkQuery(x.Block, x.Set, x.Seed); got != x.Query {
			t.Errorf("linkQuery(%s, %q, %d) = %s, want %s", x.Block, x.Set, x.Seed, got, x.Query)
		}
		states, order, err := parseLinkQuery(x.Query)
		if err != nil || len(order) != 1 || order[0] != x.Block {
			t.Errorf("parseLinkQuery(%s): %v %v", x.Query, order, err)
			continue
		}
		if st := states[x.Block]; st.Seed != x.Seed || !slices.Equal(st.Set, x.Set) && len(st.Set)+len(x.Set) > 0 {
			t.Errorf("parseLinkQuery(%s) = %q seed %d, want %q seed %d", x.Query, st.Set, st.Seed, x.Set, x.Seed)
		}
	}
}
