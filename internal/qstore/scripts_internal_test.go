package qstore

import (
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/worksteal/worksteal/internal/redistest"
)

var definedFunction = regexp.MustCompile(`(?m)^local function ([A-Za-z_]\w*)`)

// Each script declares the parts whose functions it calls ("-- needs:"),
// and only those: a call of another file's function that the file does
// not declare, a part declared for nothing, and a part's function defined
// again elsewhere fail. Parts are files here too: maintain.lua declares
// the parts it calls.
func TestScriptsDeclareTheirParts(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	needs := map[string][]string{}
	isPart := map[string]bool{}
	for _, f := range files {
		name := strings.TrimSuffix(f, ".lua")
		n, err := needsOf(name)
		if err != nil {
			t.Fatal(err)
		}
		needs[name] = n
		for _, p := range n {
			isPart[p] = true
		}
	}
	// The functions each file defines, by name: a part's are unique.
	definedBy := map[string][]string{}
	for _, f := range files {
		name := strings.TrimSuffix(f, ".lua")
		for _, m := range definedFunction.FindAllStringSubmatch(luaCode(t, f), -1) {
			definedBy[m[1]] = append(definedBy[m[1]], name)
		}
	}
	for fn, names := range definedBy {
		for _, name := range names {
			if isPart[name] && len(names) > 1 {
				t.Errorf("%s is defined by %s.lua, a part, and again by %v", fn, name, names)
			}
		}
	}
	for _, f := range files {
		name := strings.TrimSuffix(f, ".lua")
		code := luaCode(t, f)
		used := map[string]bool{}
		for fn, names := range definedBy {
			part := names[0]
			if len(names) != 1 || part == name || regexp.MustCompile(`\blocal\s+function\s+`+fn+`\b`).MatchString(code) {
				continue // the file's own function, or one of that name
			}
			if regexp.MustCompile(`(^|[^.:\w])` + fn + `\s*\(`).MatchString(code) {
				used[part] = true
				if !slices.Contains(needs[name], part) {
					t.Errorf("%s calls %s but does not declare %s.lua: add it to its first line (%s %s)", f, fn, part, needsHeader, part)
				}
			}
		}
		for _, p := range needs[name] {
			if !used[p] {
				t.Errorf("%s declares %s.lua but calls none of its functions", f, p)
			}
		}
	}
}

// Every script assembles, and each part comes before the parts that
// need it, once.
func TestAssembleOrdersParts(t *testing.T) {
	t.Parallel()
	src, err := assemble("claim", "")
	if err != nil {
		t.Fatal(err)
	}
	at := func(part string) int {
		body, _ := luaFiles.ReadFile(part + ".lua")
		if strings.Count(src, string(body)) != 1 {
			t.Fatalf("claim's source holds %s.lua %d times, want once", part, strings.Count(src, string(body)))
		}
		return strings.Index(src, string(body))
	}
	for _, before := range [][2]string{{"types", "maintain"}, {"lanes", "maintain"}, {"lease", "claim"}, {"claimtyped", "claim"}} {
		if at(before[0]) > at(before[1]) {
			t.Errorf("claim's source holds %s.lua after %s.lua, which needs it", before[0], before[1])
		}
	}
	lean, err := assemble("enqueuewith", "unique")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(lean, "local function uniqueHolder") {
		t.Error("enqueuewith without unique holds unique.lua")
	}
	one := onlyCalled(mustAssemble("enqueueone", ""), "enqueueone")
	for fn, want := range map[string]bool{"pushLane": true, "laneOf": true, "pushPending": false} {
		if got := strings.Contains(one, "local function "+fn+"("); got != want {
			t.Errorf("enqueueone of its calls holds %s: %v, want %v", fn, got, want)
		}
	}
	if _, err := assemble("enqueuewith", "readyat"); err == nil {
		t.Error("enqueuewith left out readyat.lua, which it does not declare")
	}
}

// onlyCalled, on any script of this package, leaves out only functions
// that nothing it keeps names outside a comment (a part's code outside
// its functions too), and cuts no function in two: what it leaves
// compiles in Redis. A name that is the start of another's, or that a
// comment holds, keeps nothing it should not drop.
func TestOnlyCalledDropsOnlyWhatNothingCalls(t *testing.T) {
	t.Parallel()
	rdb := redistest.Start(t).Client(t)
	ctx := context.Background()
	files, err := filepath.Glob("*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(f, ".lua")
		src := mustAssemble(name, "")
		kept := onlyCalled(src, name)
		if err := rdb.ScriptLoad(ctx, kept).Err(); err != nil {
			t.Errorf("%s of its calls does not compile: %v", name, err)
			continue
		}
		var code strings.Builder
		for l := range strings.Lines(kept) {
			c, _, _ := strings.Cut(l, "--")
			code.WriteString(c + "\n")
		}
		for _, m := range definedFunction.FindAllStringSubmatch(src, -1) {
			fn := m[1]
			if strings.Contains(kept, "local function "+fn+"(") {
				continue
			}
			if regexp.MustCompile(`\b` + fn + `\b`).MatchString(code.String()) {
				t.Errorf("%s of its calls names %s, which it left out", name, fn)
			}
		}
	}
	one := onlyCalled(mustAssemble("enqueueone", ""), "enqueueone")
	// lanes.lua's laneOf, called by pushLane, is not lanesFor's (newitems.lua).
	if !strings.Contains(one, "local function laneOf(") || strings.Contains(one, "lanesFor") {
		t.Error("enqueueone of its calls lacks laneOf or holds lanesFor")
	}
}
