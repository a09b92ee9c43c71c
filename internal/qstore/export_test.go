package qstore

import (
	"embed"
	"strconv"
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
	// calledAs, when not empty, is Lua put first that turns this
	// release's call of the script into the previous one's.
	calledAs string
}{
	{script: &adminListScript, parts: []string{"readyat", "admin_list"}},
	{script: &adminItemScript, parts: []string{"readyat", "admin_item"}},
	{script: &cancelScript, parts: []string{"types", "cancel"}},
	{script: &chainScript, parts: []string{"chain"}},
	{script: &claimScript, parts: []string{"expired", "types", "lanes", "maintain", "claimtyped", "claim"}},
	{script: &extendScript, parts: []string{"types", "extend"}},
	{script: &releaseScript, parts: []string{"types", "lanes", "release"}},
	{script: &enqueueWithScript, parts: []string{"undo", "lanes", "enqueuewith"}},
	{script: &enqueueUniqueScript, parts: []string{"unique", "undo", "lanes", "enqueuewith"}},
	{script: &enqueueOneScript, parts: []string{"unique", "undo", "lanes", "enqueuewith"}, calledAs: enqueueOneAsWith},
	{script: &enqueueOneDelayedScript, parts: []string{"unique", "undo", "lanes", "enqueuewith"}, calledAs: enqueueOneAsWith},
	{script: &enqueueJoinScript, parts: []string{"unique", "lanes", "enqueuejoin"}},
	{script: &joinScript, parts: []string{"join"}},
	{script: &joinResultsScript, parts: []string{"joinresults"}},
	{script: &tidyScript, parts: []string{"expired", "types", "lanes", "maintain", "tidy"}},
	{script: &promoteScript, parts: []string{"types", "lanes", "maintain", "byid", "promote"}},
	{script: &requeueScript, parts: []string{"lanes", "byid", "requeue"}},
	{script: &purgeScript, parts: []string{"byid", "purge"}},
	{script: &settleScript, parts: []string{"expired", "unique", "types", "lanes", "settle"}},
	{script: &enqueueScript, parts: []string{"undo", "lanes", "enqueue"}},
	{script: &depthScript, parts: []string{"readyat", "depth"}},
	{script: &resultScript, parts: []string{"result"}},
	{script: &stateScript, parts: []string{"state"}},
}

// Releases returns the functions that make every Store of this process
// run the previous release's scripts, or this one's. A test that calls
// them must not be parallel, and must leave this release's in place.
func Releases() (previous, this func()) {
	old := make([]*redis.Script, len(previousRelease))
	now := make([]*redis.Script, len(previousRelease))
	for i, r := range previousRelease {
		var src strings.Builder
		src.WriteString(r.calledAs)
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

// enqueueOneAsWith turns enqueueone.lua's keys and arguments into those
// of enqueuewith.lua, which the previous release ran for every item.
var enqueueOneAsWith = `do
  local values, lock, a = KEYS[1], KEYS[3], {unpack(ARGV)}
  local tag = string.sub(values, 1, #values - 7)
  KEYS[1], KEYS[2], KEYS[3] = tag .. ':pending', values, tag .. ':delayed'
  KEYS[4], KEYS[5], KEYS[6] = tag .. ':limits', tag .. ':dead', lock
  ARGV[1], ARGV[2], ARGV[3] = ` + strconv.Quote(encodingPin) + `, a[1], a[2]
  ARGV[4], ARGV[5], ARGV[6] = a[3] or '0', a[5] or '0', a[4] or '0'
  ARGV[7], ARGV[8], ARGV[9], ARGV[10] = '', '0', '0', a[6] or ''
end
`
