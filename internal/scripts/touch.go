package scripts

import (
	"context"

	"github.com/redis/go-redis/v9"
)

var touch, cover = load("touch"), load("cover")

// Touch writes value to field of the hash key again if it holds it
// already, and reports whether it did: a write that changes nothing, after
// which a WAIT on the same connection covers every earlier write, another
// client's included (see touch.lua).
func Touch(ctx context.Context, rdb redis.Scripter, key, field, value string) (bool, error) {
	v, err := touch.Run(ctx, rdb, []string{key}, field, value)
	return decode(v, err, isOne)
}

// Cover queues on p, after a script sent with WAIT, a write that changes
// nothing to the first of keys, the script's, that is a primitive's hash
// (one with a 'k' field), so that the WAIT after it covers every earlier
// write (see cover.lua). It replies 1 if it wrote, 0 if there was no such
// hash; an error (out of memory, a moved slot) means that the WAIT covers
// only what the connection wrote. Like every script it goes by its SHA1:
// on NOSCRIPT, the caller queues LoadCover and Cover again.
func Cover(ctx context.Context, p redis.Pipeliner, keys []string) *redis.Cmd {
	return cover.EvalSha(ctx, p, keys)
}

// LoadCover queues on p the SCRIPT LOAD of Cover's script. (Not by
// redis.Script.Load, which keeps the reply as the script's SHA1: queued,
// it has none yet.)
func LoadCover(ctx context.Context, p redis.Pipeliner) {
	_ = p.ScriptLoad(ctx, cover.src)
}
