// Command etchat is a desktop app and command line for ExecuTorch MLX .pte
// language models. main only wires: a subcommand goes to package cli,
// anything else opens the window.
package main

import (
	"context"
	"os"
	"os/signal"

	"etchat/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := cli.Run(ctx, cli.OSEnv(), os.Args[1:])
	stop()
	os.Exit(code)
}
