// Package worksqueue lets a recruiter ask a job which queue it works, so
// that Register can refuse a queue under another key prefix than the
// recruiter's (its jobs would then be listed under one prefix and its
// queues under another, and neither inspect, the dashboard nor the CLI
// would show them together), and Check can ask whether the ACL user may
// run the queue's scripts. It adds no exported API: the jobs of packages
// jobs and tasks embed a [Mark] under an unexported name, and only this
// package calls its unexported method (as qstore.Handle does).
package worksqueue

import (
	"regexp"
	"slices"
	"strings"
)

// Mark says which queue a job works: its key prefix, its name, and the
// commands its scripts call (see [Commands]).
type Mark struct {
	prefix, queue string
	commands      func() map[string][]string
}

// New returns the mark of the queue called queue under prefix, whose
// scripts call the commands that commands returns.
func New(prefix, queue string, commands func() map[string][]string) Mark {
	return Mark{prefix, queue, commands}
}

func (m Mark) worksQueue() Mark { return m }

// Of returns the prefix and name of the queue that job works, and
// whether it says (a job without a Mark, or with a zero one, does not).
func Of(job any) (prefix, queue string, ok bool) {
	m, ok := markOf(job)
	return m.prefix, m.queue, ok
}

// Commands returns a key of the queue that job works and the commands its
// scripts call, each with the scripts that call it; false as [Of].
func Commands(job any) (key string, uses map[string][]string, ok bool) {
	m, ok := markOf(job)
	if !ok || m.commands == nil {
		return "", nil, false
	}
	return "{" + m.prefix + ":q:" + m.queue + "}:pending", m.commands(), true
}

func markOf(job any) (Mark, bool) {
	j, ok := job.(interface{ worksQueue() Mark })
	if !ok {
		return Mark{}, false
	}
	m := j.worksQueue()
	return m, m.queue != ""
}

// scriptCall finds the commands a Lua script calls.
var scriptCall = regexp.MustCompile(`redis\.p?call\(\s*['"]([A-Za-z|]+)['"]`)

// AddCommands adds to uses each command that the script src, called
// name, calls (in lower case), with name among its users.
func AddCommands(uses map[string][]string, name, src string) {
	for _, m := range scriptCall.FindAllStringSubmatch(src, -1) {
		c := strings.ToLower(m[1])
		if !slices.Contains(uses[c], name) {
			uses[c] = append(uses[c], name)
			slices.Sort(uses[c])
		}
	}
}
