package qstore

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// pushOwner is the one script file that pushes to pending lists: its
// pushLane, and pushPending, which calls it, put each item in its
// priority's lane.
const pushOwner = "lanes.lua"

// otherLists are the lists, not pending ones, that scripts other than
// pushOwner push to, by file and by the key argument as written there.
var otherLists = map[string]map[string]string{
	"cancel.lua":     {"wake": "a waiter's wake-up list"},
	"claimtyped.lua": {"parkedTypes .. ':' .. typ": "a task type's items set aside by its limit"},
	"release.lua":    {"tag .. ':parked:' .. typ": "a task type's items set aside by its limit"},
	"settle.lua": {
		"key":      "a waiter's notification list",
		"KEYS[10]": "the results' expiry list",
	},
}

// listWrites are the commands that add an element to a list.
var listWrites = map[string]bool{
	"LPUSH": true, "RPUSH": true, "LPUSHX": true, "RPUSHX": true, "LINSERT": true, "LSET": true,
	"LMOVE": true, "BLMOVE": true, "RPOPLPUSH": true, "BRPOPLPUSH": true,
	"COPY": true, "RENAME": true, "RENAMENX": true, "RESTORE": true, "SORT": true,
}

var (
	// redisCall matches a command call, with its command and first key
	// as written; redisFunc, redis.call or redis.pcall, and the call's
	// parenthesis if it is called there.
	redisCall = regexp.MustCompile(`redis\.p?call\(\s*([^,)]*?)\s*,\s*([^,)]*?)\s*[,)]`)
	redisFunc = regexp.MustCompile(`redis\.p?call\b\s*(\(?)`)
	quoted    = regexp.MustCompile(`^['"]([A-Za-z]+)['"]$`)
)

// No script makes an item pending but through the one lanes-aware push
// (STYLE.md, rule 13): a push to a list outside pushOwner must be to a
// list known not to be pending, and no script outside it names its
// command by a variable or hands redis.call on but to pushLane, either of
// which could hide one.
func TestOnlyPushLaneMakesItemsPending(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	seen := map[string]map[string]bool{}
	for _, f := range files {
		if f == pushOwner {
			continue
		}
		src := luaCode(t, f)
		lineOf := func(at int) int { return 1 + strings.Count(src[:at], "\n") }
		for _, m := range redisFunc.FindAllStringSubmatchIndex(src, -1) {
			if m[2] == m[3] && !strings.HasSuffix(strings.TrimSpace(src[:m[0]]), "pushLane(") {
				t.Errorf("%s:%d: %s handed on: call it, or push through pushLane (%s)", f, lineOf(m[0]), src[m[0]:m[1]], pushOwner)
			}
		}
		for _, m := range redisCall.FindAllStringSubmatchIndex(src, -1) {
			cmd, key := src[m[2]:m[3]], src[m[4]:m[5]]
			name := quoted.FindStringSubmatch(cmd)
			switch {
			case name == nil:
				t.Errorf("%s:%d: a command named by a variable (%s): name it, or push through pushLane (%s)", f, lineOf(m[0]), cmd, pushOwner)
			case !listWrites[strings.ToUpper(name[1])]:
			case otherLists[f][key] == "":
				t.Errorf("%s:%d: %s %s: a push to pending goes through pushLane or pushPending (%s); a list that is not pending goes in otherLists", f, lineOf(m[0]), name[1], key, pushOwner)
			default:
				if seen[f] == nil {
					seen[f] = map[string]bool{}
				}
				seen[f][key] = true
			}
		}
	}
	for f, keys := range otherLists {
		for key := range keys {
			if !seen[f][key] {
				t.Errorf("otherLists: %s no longer pushes to %s: take it out", f, key)
			}
		}
	}
	// The owner's one push is pushLane's.
	if n := strings.Count(luaCode(t, pushOwner), "call(cmd, "); n != 1 {
		t.Errorf("%s pushes in %d places, want 1 (pushLane)", pushOwner, n)
	}
}

// luaCode is the script file f without its comments, line for line.
func luaCode(t *testing.T, f string) string {
	t.Helper()
	src, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	for i, l := range lines {
		lines[i], _, _ = strings.Cut(l, "--")
	}
	return strings.Join(lines, "\n")
}
