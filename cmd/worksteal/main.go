// Command worksteal is the operators' command line of a worksteal fleet:
// what its Redis holds (queues by state, dead letters, each job's lock,
// pause, pace and schedule) and the actions of an incident (retry or
// purge dead letters, pause or resume a job fleet-wide). It reads and
// acts through package inspect, as the dashboard does.
//
//	go install github.com/worksteal/worksteal/cmd/worksteal@latest
//	worksteal --redis redis://ops:PASSWORD@redis:6379 stats
//	worksteal dead list mail
//	worksteal dead retry mail --all
//	worksteal pause tasks.mail 15m
//
// Run worksteal help for the commands and flags; docs/operations.md
// walks through the incidents, and docs/redis.md gives the ACL grants:
// a read-only user for stats and lists, an operator for the actions.
//
// # Exit codes
//
//	0  done
//	1  Redis failed or refused (a network error, a timeout)
//	2  bad usage: an unknown command or flag, a malformed argument
//	3  not found: an unknown queue, job or item
//	4  permission denied: the ACL user lacks a grant (NOPERM)
//
// It lives in a module of its own, so that the library's users never
// download what only the command needs.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/inspect"
)

var quietOnce sync.Once

// quiet drops go-redis's own log lines: the command reports the error.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// Exit codes; see the package doc.
const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitNotFound = 3
	exitDenied   = 4
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// errUsage marks a usage error: exit 2, with the usage hint.
var errUsage = errors.New("usage")

func usagef(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{errUsage}, args...)...)
}

// run is the command, with its streams: the tests call it in-process.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	quietOnce.Do(func() { redis.SetLogger(quiet{}) }) // its pool's retries would print over ours
	err := dispatch(ctx, args, stdout)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "worksteal:", err)
	return exitCode(err)
}

func exitCode(err error) int {
	switch {
	case errors.Is(err, errUsage), errors.Is(err, inspect.ErrInvalidArgument), errors.Is(err, inspect.ErrInvalidConfig):
		return exitUsage
	case errors.Is(err, inspect.ErrUnknownQueue), errors.Is(err, inspect.ErrUnknownJob), errors.Is(err, inspect.ErrNotFound):
		return exitNotFound
	// A command refused directly (NOPERM), or inside a script, which
	// servers word in their own ways.
	case strings.Contains(err.Error(), "NOPERM"), strings.Contains(err.Error(), "can't run this command"),
		strings.Contains(err.Error(), "no permissions to run"):
		return exitDenied
	}
	return exitFailed
}
