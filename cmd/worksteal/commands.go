package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/inspect"
)

// pauseDefault is how long `pause JOB` pauses without FOR: long enough
// for an incident, short enough that a forgotten pause ends by itself.
const pauseDefault = time.Hour

// command is one command: its extra flags and what it does.
type command struct {
	flags func(fs *flag.FlagSet, o *cmdOpts)
	run   func(ctx context.Context, c *cli, args []string) error
}

// cmdOpts are the flags of some commands.
type cmdOpts struct {
	offset, limit int
	all           bool
	max           int
	queue         string
}

// cli is what a command runs with.
type cli struct {
	in   *inspect.Inspector
	rdb  redis.UniversalClient
	g    *globals
	o    cmdOpts
	out  io.Writer
	name string
}

var commands = map[string]command{
	"stats":     {run: cmdStats},
	"queues":    {run: cmdQueues},
	"jobs":      {run: cmdJobs},
	"schedules": {run: cmdSchedules},
	"types":     {run: cmdTypes},
	"items":     {flags: pageFlags, run: cmdItems},
	"dead list": {flags: pageFlags, run: cmdDeadList},
	"dead retry": {flags: allFlag, run: func(ctx context.Context, c *cli, args []string) error {
		return cmdDeadAct(ctx, c, args, "retry", c.in.RetryDead, c.in.RetryAllDead)
	}},
	"dead purge": {flags: allFlag, run: func(ctx context.Context, c *cli, args []string) error {
		return cmdDeadAct(ctx, c, args, "purge", c.in.PurgeDead, c.in.PurgeAllDead)
	}},
	"pause":  {run: cmdPause},
	"resume": {run: cmdResume},
	"task show": {flags: func(fs *flag.FlagSet, o *cmdOpts) {
		fs.StringVar(&o.queue, "queue", "", "the item's queue (default: every registered queue)")
	}, run: cmdTaskShow},
	"task cancel": {flags: func(fs *flag.FlagSet, o *cmdOpts) {
		fs.StringVar(&o.queue, "queue", "", "the task's queue (default: the first registered queue that holds it)")
	}, run: cmdTaskCancel},
	"chain":  {run: cmdChain},
	"fanout": {run: cmdFanOut},
}

func pageFlags(fs *flag.FlagSet, o *cmdOpts) {
	fs.IntVar(&o.offset, "offset", 0, "skip this many of the oldest")
	fs.IntVar(&o.limit, "limit", 50, "list at most this many (1 to 1000)")
}

func allFlag(fs *flag.FlagSet, o *cmdOpts) {
	fs.BoolVar(&o.all, "all", false, "every dead letter of the queue, the oldest first")
	fs.IntVar(&o.max, "max", 0, "with --all: at most this many (default: every one)")
}

// dispatch finds the command (one word, or two for dead and task),
// parses its flags and runs it. Flags may come before and after the
// command's name.
func dispatch(ctx context.Context, args []string, out io.Writer) error {
	var pre globals
	top := newFlagSet("worksteal", &pre, out)
	top.Usage = func() {}
	if err := top.Parse(args); errors.Is(err, flag.ErrHelp) || len(top.Args()) > 0 && top.Arg(0) == "help" {
		fmt.Fprint(out, usageText())
		top.SetOutput(out)
		top.PrintDefaults()
		return nil
	} else if err != nil {
		return usagef("%v", err)
	}
	words := top.Args()
	if len(words) == 0 {
		return usagef("no command: run worksteal help")
	}
	name, n := words[0], 1
	if (name == "dead" || name == "task") && len(words) > 1 {
		name, n = name+" "+words[1], 2
	}
	cmd, ok := commands[name]
	if !ok {
		return usagef("unknown command %q: run worksteal help", name)
	}
	var g globals
	c := &cli{g: &g, out: out, name: name}
	fs := newFlagSet("worksteal "+name, &g, out)
	if cmd.flags != nil {
		cmd.flags(fs, &c.o)
	}
	rest, err := parse(fs, args)
	if err != nil {
		return err
	}
	rest = rest[n:] // the command's words, which parse kept in order
	rdb, err := g.client()
	if err != nil {
		return err
	}
	defer rdb.Close()
	c.rdb = rdb
	if c.in, err = inspect.New(rdb, inspect.Config{Prefix: g.prefix}); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	err = cmd.run(ctx, c, rest)
	if err != nil && notFound(err) {
		// A name that matches nothing under a prefix that holds nothing:
		// the prefix is the likelier typo.
		if empty, eerr := c.empty(ctx); eerr == nil && empty {
			return fmt.Errorf("%w (%w)", emptyPrefix(g.prefix), err)
		}
	}
	return err
}

func notFound(err error) bool {
	return errors.Is(err, inspect.ErrUnknownQueue) || errors.Is(err, inspect.ErrUnknownJob) || errors.Is(err, inspect.ErrNotFound)
}

// orEmpty is nil, or the error that says the prefix holds nothing when a
// list came back empty (n == 0) and the registry lists nothing at all.
func (c *cli) orEmpty(ctx context.Context, n int) error {
	if n > 0 {
		return nil
	}
	empty, err := c.empty(ctx)
	if err != nil || !empty {
		return err
	}
	return emptyPrefix(c.g.prefix)
}

// empty reports whether the registry lists no queue and no job.
func (c *cli) empty(ctx context.Context) (bool, error) {
	qs, err := c.in.Queues(ctx)
	if err != nil || len(qs) > 0 {
		return false, err
	}
	js, err := c.in.Jobs(ctx)
	return len(js) == 0, err
}

// listStates are the states that items lists, in the order its usage
// names them: the parser and the messages read this one list.
var listStates = []inspect.State{inspect.StatePending, inspect.StateLeased, inspect.StateDelayed, inspect.StateDead}

// stateNames is "pending, leased, delayed or dead".
func stateNames() string {
	var names []string
	for _, s := range listStates {
		names = append(names, s.String())
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func parseListState(name string) (inspect.State, error) {
	for _, s := range listStates {
		if s.String() == name {
			return s, nil
		}
	}
	return inspect.StateUnknown, usagef("items: state %q: want %s (a done item: task show ID)", name, stateNames())
}

func wantArgs(c *cli, args []string, min, max int, names string) error {
	if len(args) < min || len(args) > max {
		return usagef("%s takes %s", c.name, names)
	}
	return nil
}

func parseFor(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		if n, nerr := strconv.Atoi(s); nerr == nil {
			return time.Duration(n) * time.Second, nil
		}
		return 0, usagef("pause FOR %q: want a duration such as 15m or 2h", s)
	}
	return d, nil
}
