package main

// The ACL grants of the command's users, as docs/redis.md gives them
// (TestGrantsDocumented keeps the two in step), for the default prefix.
// Reads run read-only scripts and plain reads (+info: stats reads the
// eviction policy); actions add the writes of the requeue, purge, pause
// and cancel scripts. +command, +cluster|slots and +asking are for
// --cluster.
const (
	grantRead = "ACL SETUSER worksteal-read on >PASSWORD resetkeys ~worksteal:* ~{worksteal:* resetchannels -@all " +
		"+evalsha +eval +time +exists +hget +hmget +hgetall +hexists +llen +lindex +lrange +zcard +zcount +zscore +zmscore +zrange +hkeys +smembers +info " +
		"+command +cluster|slots +asking"
	grantOperate = "ACL SETUSER worksteal-operator on >PASSWORD resetkeys ~worksteal:* ~{worksteal:* resetchannels -@all " +
		"+evalsha +eval +time +exists +hget +hmget +hgetall +hexists +llen +lindex +lrange +zcard +zcount +zscore +zmscore +zrange +hkeys +smembers +info " +
		"+command +cluster|slots +asking " + grantWrites
	// grantWrites are what the operator's grant adds to the reader's.
	grantWrites = "+hset +hdel +lpush +zrem +pexpire +pttl +rpush +sadd +zadd +zrangebyscore"
)

// actionWrites are what each action's script writes with, as the table of
// docs/redis.md gives them: a refusal inside a script names no command,
// so the hint names these.
var actionWrites = map[string]string{
	"dead retry":  "+lpush +hset +hdel +zrem",
	"dead purge":  "+lpush +hset +hdel +zrem",
	"pause":       "+hset +hdel +pttl +pexpire",
	"resume":      "+hset +hdel +pttl +pexpire",
	"task cancel": "+zadd +zrem +zrangebyscore +sadd +rpush +hdel +pexpire +pttl",
}
