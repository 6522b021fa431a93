// Command sim runs connlab's labs: the model in a terminal (sim run), the
// model against real loopback servers (sim validate), the site (sim serve)
// and classroom exercises (sim exercise). Run `sim --help`.
package main

import (
	"context"
	"os"

	"github.com/connlab/connlab/sim/cli"
	"github.com/connlab/connlab/sim/harness/roles"
)

func main() {
	// The harness's lab and worker processes are this binary re-executed
	// with a hidden subcommand.
	if code, ok := roles.Main(os.Args[1:]); ok {
		os.Exit(code)
	}
	ctx, stop := cli.Signals(context.Background())
	code := cli.Run(ctx, &cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}
