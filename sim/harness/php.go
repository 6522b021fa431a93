package harness

import (
	"fmt"
	"path/filepath"

	"github.com/connlab/connlab/sim/harness/wire"
	"github.com/connlab/connlab/sim/lab"
	"github.com/connlab/connlab/sim/phpwasm"
)

// StandInNote begins the runtime's name when a php variant ran on the
// http setup's Go workers because PHP 8.5 could not run here.
const StandInNote = "Go stand-in for PHP 8.5"

// phpRun is what a php setup's variant runs on here.
type phpRun struct {
	job   *wire.PHPJob
	setup string // the setup that runs: the variant's, or http standing in
	// standIn says why PHP 8.5 did not run (the http setup's Go workers
	// did); skip why the variant cannot run at all.
	standIn, skip string
}

// resolvePHP finds the program a php or php-native variant of b runs: the
// driver and Node.js, the PHP 8.5 package or the native php, and the lab's
// script. Without PHP 8.5 the http setup stands in; without a native php
// the variant is not run. A script the lab names but lacks is an error.
func resolvePHP(b *lab.Block, vp *VariantPlan, standIn bool) (*phpRun, error) {
	r := &phpRun{setup: vp.Setup}
	if standIn && vp.Setup == SetupPHP {
		r.setup, r.standIn = SetupHTTP, "asked for the stand-in"
		return r, nil
	}
	root, err := phpwasm.Root(filepath.Dir(b.File))
	var driver, node, binary string
	if err == nil {
		if vp.Setup == SetupPHPNative {
			driver, node, err = phpwasm.FindDriver(root)
		} else {
			driver, node, err = phpwasm.Find(root)
		}
	}
	if err == nil && vp.Setup == SetupPHPNative {
		binary, _, err = phpwasm.FindNative()
	}
	if err != nil {
		if vp.Setup == SetupPHPNative {
			r.skip = "the native PHP cannot run here: " + err.Error()
			return r, nil
		}
		r.setup, r.standIn = SetupHTTP, err.Error()
		return r, nil
	}
	s := vp.Scenario
	script, err := phpwasm.Script(b.ScriptFolder(), vp.Script, vp.Name, &s)
	if err != nil {
		return nil, fmt.Errorf("%s: block %q: %w", b.File, b.ID, err)
	}
	r.job = &wire.PHPJob{Node: node, Driver: driver, Script: script, Binary: binary}
	return r, nil
}
