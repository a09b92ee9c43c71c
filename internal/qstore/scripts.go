package qstore

import (
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/worksteal/worksteal/internal/worksqueue"
)

// luaFiles are the scripts and the parts they share (lanes.lua, types.lua,
// ...): a file whose first line is "-- needs: a, b" is sent after a.lua
// and b.lua, and after the parts these need in turn.
//
//go:embed *.lua
var luaFiles embed.FS

const needsHeader = "-- needs:"

// newScript is the script of name.lua, with its parts put before it, each
// once and after the parts it needs. Each script is assembled once, as
// the package loads, so a part that is missing or unknown fails every
// test of the package.
func newScript(name string) *redis.Script {
	return redis.NewScript(mustAssemble(name, ""))
}

// newScriptWithout is newScript without the part leftOut (and what only
// it needs), which name.lua must declare: for a script whose callers use
// that part's functions only in some calls, and run the lighter script in
// the others (Redis makes a script's functions anew on every call).
func newScriptWithout(name, leftOut string) *redis.Script {
	return redis.NewScript(mustAssemble(name, leftOut))
}

// newScriptOfCalls is newScriptWithout, its parts holding only the
// functions that name.lua calls, and those that these call: each function
// costs a closure on every call (about 1 % of an enqueue's Redis time).
func newScriptOfCalls(name, leftOut string) *redis.Script {
	return redis.NewScript(onlyCalled(mustAssemble(name, leftOut), name))
}

func mustAssemble(name, leftOut string) string {
	src, err := assemble(name, leftOut)
	if err != nil {
		panic("qstore: " + err.Error())
	}
	return src
}

// partFunction is a function of a part, from its first line to its last,
// "end" at the start of a line, as the parts write them.
var partFunction = regexp.MustCompile(`(?ms)^local function (\w+)\(.*?^end\n`)

// onlyCalled is src, name.lua assembled, without the parts' functions
// that name.lua does not call, directly or through the functions it
// keeps.
func onlyCalled(src, name string) string {
	own, _ := luaFiles.ReadFile(name + ".lua")
	parts := strings.TrimSuffix(src, string(own))
	kept, calls := map[string]bool{}, string(own)
	for grown := true; grown; {
		grown = false
		for _, m := range partFunction.FindAllStringSubmatch(parts, -1) {
			if !kept[m[1]] && regexp.MustCompile(`\b`+m[1]+`\b`).MatchString(calls) {
				kept[m[1]], calls, grown = true, calls+m[0], true
			}
		}
	}
	return partFunction.ReplaceAllStringFunc(parts, func(f string) string {
		if kept[partFunction.FindStringSubmatch(f)[1]] {
			return f
		}
		return ""
	}) + string(own)
}

// assemble joins name.lua's parts and name.lua, a part before the parts
// that need it.
func assemble(name, leftOut string) (string, error) {
	needs, err := needsOf(name)
	if err != nil {
		return "", err
	}
	if leftOut != "" && !slices.Contains(needs, leftOut) {
		return "", fmt.Errorf("%s.lua does not need %s: nothing to leave out", name, leftOut)
	}
	var b strings.Builder
	done, adding := map[string]bool{leftOut: true}, map[string]bool{}
	var add func(part string) error
	add = func(part string) error {
		if done[part] {
			return nil
		}
		if adding[part] {
			return fmt.Errorf("%s.lua needs itself, through the parts it needs", part)
		}
		adding[part] = true
		needs, err := needsOf(part)
		if err != nil {
			return err
		}
		for _, p := range needs {
			if p == leftOut && part != name {
				return fmt.Errorf("%s.lua needs %s, which %s leaves out", part, leftOut, name)
			}
			if err := add(p); err != nil {
				return err
			}
		}
		src, _ := luaFiles.ReadFile(part + ".lua")
		b.Write(src)
		if len(src) > 0 && src[len(src)-1] != '\n' {
			b.WriteByte('\n')
		}
		done[part] = true
		return nil
	}
	if err := add(name); err != nil {
		return "", err
	}
	return b.String(), nil
}

// needsOf reads the parts that name.lua's first line declares.
func needsOf(name string) ([]string, error) {
	src, err := luaFiles.ReadFile(name + ".lua")
	if err != nil {
		return nil, fmt.Errorf("no script %s.lua", name)
	}
	first, _, _ := strings.Cut(string(src), "\n")
	list, ok := strings.CutPrefix(first, needsHeader)
	if !ok {
		return nil, nil
	}
	var needs []string
	for p := range strings.SplitSeq(list, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			return nil, fmt.Errorf("%s.lua: an empty name in %q", name, first)
		}
		if _, err := luaFiles.Open(p + ".lua"); err != nil {
			return nil, fmt.Errorf("%s.lua needs %s, which is no part (no %s.lua)", name, p, p)
		}
		needs = append(needs, p)
	}
	return needs, nil
}

// ScriptCommands maps each command that a queue script calls to the
// scripts and parts that call it, for the recruiter's ACL check.
func ScriptCommands() map[string][]string {
	uses := map[string][]string{}
	names, _ := fs.Glob(luaFiles, "*.lua")
	for _, name := range names {
		src, _ := luaFiles.ReadFile(name)
		worksqueue.AddCommands(uses, name, string(src))
	}
	return uses
}
