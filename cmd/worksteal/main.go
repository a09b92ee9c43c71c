// Command worksteal is the operators' command line of a worksteal fleet:
// what its Redis holds (queues by state, dead letters, each job's lock,
// pause, pace and schedule) and the actions of an incident (retry or
// purge dead letters, pause or resume a job fleet-wide). It reads and
// acts through package inspect, as the dashboard does.
//
//	go install github.com/worksteal/worksteal/cmd/worksteal@latest
//	cd cmd/worksteal && go install .   # from a checkout: a module of its own
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
//	3  not found: an unknown queue, job or item; an id that dead retry or
//	   dead purge finds no dead letter of the queue (the others are done)
//	4  permission denied: the ACL user lacks a grant (NOPERM); the
//	   message names the command, or the action's writes, and the grant
//	5  nothing under the prefix: no queues or jobs (is --prefix right?)
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
	"regexp"
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
	exitEmpty    = 5
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
	code := exitCode(err)
	fmt.Fprintln(stderr, "worksteal:", err)
	if code == exitDenied {
		fmt.Fprintln(stderr, "worksteal:", deniedHint(err, args))
	}
	return code
}

func exitCode(err error) int {
	switch {
	case errors.Is(err, errEmpty):
		return exitEmpty
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

// errEmpty: the prefix holds no queue and no job, which is most often a
// wrong --prefix.
var errEmpty = errors.New("nothing under the prefix")

func emptyPrefix(prefix string) error {
	return fmt.Errorf("%w: no queues or jobs under prefix %s: is --prefix right? (or $WORKSTEAL_PREFIX; "+
		"a fleet's recruiters list its queues and jobs once they ran a slice)", errEmpty, prefix)
}

// nopermCommand finds the command that Redis named in a NOPERM refusal
// ("… has no permissions to run the 'hset' command"); "" inside a
// script, whose refusal names none.
var nopermCommand = regexp.MustCompile(`permissions to run the '([^']+)' command`)

// deniedHint says what the ACL user lacks and where the grant is.
func deniedHint(err error, args []string) string {
	const where = "docs/redis.md gives the grants (worksteal-read for reads, worksteal-operator for actions)"
	if m := nopermCommand.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Sprintf("the ACL user lacks the command %s (+%s): %s", strings.ToUpper(m[1]), m[1], where)
	}
	name := commandName(args)
	if w, ok := actionWrites[name]; ok {
		return fmt.Sprintf("the ACL user may not run a command of %s's script, which writes with %s: "+
			"grant worksteal-operator's %s as %s; ACL LOG, as an admin, names the one refused", name, w, grantWrites, where)
	}
	return "the ACL user may not run a command of " + name + ": " + where + "; ACL LOG, as an admin, names the one refused"
}

// commandName finds the command among args, as dispatch does: its first
// word, and the second of dead and task.
func commandName(args []string) string {
	for i, a := range args {
		if i+1 < len(args) {
			if _, ok := commands[a+" "+args[i+1]]; ok {
				return a + " " + args[i+1]
			}
		}
		if _, ok := commands[a]; ok {
			return a
		}
	}
	return "this command"
}
