package heal

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// Scripter returns s itself, or, when s is a *redis.ClusterClient, s
// with every call's error handed to [Notice]: what a package whose Redis
// calls are scripts (redis.Script.Run) wraps its client in once.
func Scripter(s redis.Scripter) redis.Scripter {
	if cc, ok := s.(*redis.ClusterClient); ok {
		return clusterScripter{cc}
	}
	return s
}

type clusterScripter struct{ cc *redis.ClusterClient }

func (s clusterScripter) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	cmd := s.cc.Eval(ctx, script, keys, args...)
	Notice(s.cc, cmd.Err())
	return cmd
}

func (s clusterScripter) EvalSha(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	cmd := s.cc.EvalSha(ctx, sha1, keys, args...)
	Notice(s.cc, cmd.Err())
	return cmd
}

func (s clusterScripter) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	cmd := s.cc.EvalRO(ctx, script, keys, args...)
	Notice(s.cc, cmd.Err())
	return cmd
}

func (s clusterScripter) EvalShaRO(ctx context.Context, sha1 string, keys []string, args ...any) *redis.Cmd {
	cmd := s.cc.EvalShaRO(ctx, sha1, keys, args...)
	Notice(s.cc, cmd.Err())
	return cmd
}

func (s clusterScripter) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	cmd := s.cc.ScriptExists(ctx, hashes...)
	Notice(s.cc, cmd.Err())
	return cmd
}

func (s clusterScripter) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	cmd := s.cc.ScriptLoad(ctx, script)
	Notice(s.cc, cmd.Err())
	return cmd
}
