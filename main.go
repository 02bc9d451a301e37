// Command etchat is a desktop app and command line for ExecuTorch MLX .pte
// language models. main only wires: it registers the engines linked in
// (package internal/engines), then a subcommand goes to package cli and
// anything else opens the window.
package main

import (
	"context"
	"os"
	"os/signal"

	"etchat/app"
	"etchat/cli"
	"etchat/internal/engines"
	_ "etchat/internal/locale" // before Fyne initialises: see the package doc
)

func main() {
	engines.Register()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	var code int
	if cli.IsCommand(os.Args[1:]) {
		// Off the main goroutine: Fyne's driver locks it to the main
		// thread at init, and every time the scheduler parks and
		// resumes a locked goroutine it hands the processor between
		// OS threads; the engines' work ran ~10% slower there
		// (docs/performance.md).
		done := make(chan int)
		go func() { done <- cli.Run(ctx, cli.OSEnv(), os.Args[1:]) }()
		code = <-done
	} else {
		app.Version = cli.Version
		code = app.Run(ctx, os.Args[1:])
	}
	stop()
	os.Exit(code)
}
