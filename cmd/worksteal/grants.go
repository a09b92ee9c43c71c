package main

// The ACL grants of the command's users, as docs/redis.md gives them
// (TestGrantsDocumented keeps the two in step), for the default prefix.
// Reads run read-only scripts and plain reads; actions add the writes of
// the requeue, purge, pause and cancel scripts. +command, +cluster|slots and
// +asking are for --cluster.
const (
	grantRead = "ACL SETUSER worksteal-read on >PASSWORD resetkeys ~worksteal:* ~{worksteal:* resetchannels -@all " +
		"+evalsha +eval +time +exists +hget +hmget +hgetall +hexists +llen +lindex +lrange +zcard +zcount +zscore +zmscore +zrange +hkeys +smembers " +
		"+command +cluster|slots +asking"
	grantOperate = "ACL SETUSER worksteal-operator on >PASSWORD resetkeys ~worksteal:* ~{worksteal:* resetchannels -@all " +
		"+evalsha +eval +time +exists +hget +hmget +hgetall +hexists +llen +lindex +lrange +zcard +zcount +zscore +zmscore +zrange +hkeys +smembers " +
		"+command +cluster|slots +asking " +
		"+hset +hdel +lpush +zrem +pexpire +pttl +rpush +sadd +zadd +zrangebyscore"
)
