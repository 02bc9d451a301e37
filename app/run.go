//go:build cgo

package app

import (
	"context"
	"fmt"
	"os"

	"fyne.io/fyne/v2"
	fyneapp "fyne.io/fyne/v2/app"
)

// AppID is the application identifier (FyneApp.toml says the same).
const AppID = "dev.etchat.app"

// Run opens the window and blocks until it is closed. args are the command
// line after the program name (only --db PATH is accepted). It returns the
// process exit status.
func Run(ctx context.Context, args []string) int {
	opts, err := ParseArgs(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "etchat:", err)
		return 2
	}
	a := fyneapp.NewWithID(AppID)
	a.SetIcon(Icon)
	b, closeBackend := OpenBackend(ctx, opts, NewPrefs(a.Preferences()), os.Getenv)
	defer closeBackend()
	u := NewUI(a, b)
	go func() {
		<-ctx.Done() // Ctrl+C in the terminal closes the window
		u.Close()
		fyne.Do(a.Quit)
	}()
	started := make(chan struct{})
	u.Start(opts.Models, started)
	if opts.Tour != "" {
		go func() {
			<-started
			if err := u.Tour(opts.Tour); err != nil {
				fmt.Fprintln(os.Stderr, "etchat: tour:", err)
			}
			fyne.Do(a.Quit)
		}()
	}
	u.Win.ShowAndRun()
	return 0
}
