package qstore

import (
	"embed"
	"strings"

	"github.com/redis/go-redis/v9"
)

// testdata/previous holds the scripts of the previous release (main before
// issue 37), whose Go joined each with its parts by hand, as below.
//
//go:embed testdata/previous/*.lua
var previousFiles embed.FS

var previousRelease = []struct {
	script **redis.Script
	parts  []string
}{
	{&adminListScript, []string{"readyat", "admin_list"}},
	{&adminItemScript, []string{"readyat", "admin_item"}},
	{&cancelScript, []string{"types", "cancel"}},
	{&chainScript, []string{"chain"}},
	{&claimScript, []string{"expired", "types", "lanes", "maintain", "claimtyped", "claim"}},
	{&extendScript, []string{"types", "extend"}},
	{&releaseScript, []string{"types", "lanes", "release"}},
	{&enqueueWithScript, []string{"undo", "lanes", "enqueuewith"}},
	{&enqueueUniqueScript, []string{"unique", "undo", "lanes", "enqueuewith"}},
	{&enqueueOneScript, []string{"unique", "undo", "lanes", "enqueuewith"}},
	{&enqueueJoinScript, []string{"unique", "lanes", "enqueuejoin"}},
	{&joinScript, []string{"join"}},
	{&joinResultsScript, []string{"joinresults"}},
	{&tidyScript, []string{"expired", "types", "lanes", "maintain", "tidy"}},
	{&promoteScript, []string{"types", "lanes", "maintain", "byid", "promote"}},
	{&requeueScript, []string{"lanes", "byid", "requeue"}},
	{&purgeScript, []string{"byid", "purge"}},
	{&settleScript, []string{"expired", "unique", "types", "lanes", "settle"}},
	{&enqueueScript, []string{"undo", "lanes", "enqueue"}},
	{&depthScript, []string{"readyat", "depth"}},
	{&resultScript, []string{"result"}},
	{&stateScript, []string{"state"}},
}

// Releases returns the functions that make every Store of this process
// run the previous release's scripts, or this one's. A test that calls
// them must not be parallel, and must leave this release's in place.
func Releases() (previous, this func()) {
	old := make([]*redis.Script, len(previousRelease))
	now := make([]*redis.Script, len(previousRelease))
	for i, r := range previousRelease {
		var src strings.Builder
		for _, p := range r.parts {
			b, err := previousFiles.ReadFile("testdata/previous/" + p + ".lua")
			if err != nil {
				panic(err)
			}
			src.Write(b)
		}
		old[i], now[i] = redis.NewScript(src.String()), *r.script
	}
	use := func(scripts []*redis.Script) func() {
		return func() {
			for i, r := range previousRelease {
				*r.script = scripts[i]
			}
		}
	}
	return use(old), use(now)
}
