package sim_test

import (
	"fmt"

	"github.com/connlab/connlab/sim"
)

// The phases in order, each with its key in the JSON and the waterfall
// segment that ends at it.
func ExamplePhases() {
	for _, p := range sim.Phases() {
		fmt.Printf("%-13s %-16s %-11s %s\n", p.Key, p.JSON, p.Label, p.Color)
	}
	// Output:
	// queue         queue_ms         ph_queue    #b9c2cc
	// namelookup    namelookup_ms    ph_dns      #0d9aa8
	// connect       connect_ms       ph_connect  #f29f05
	// appconnect    appconnect_ms    ph_tls      #b65ad5
	// starttransfer starttransfer_ms ph_wait     #36b37e
	// total         total_ms         ph_download #1f78d1
}
