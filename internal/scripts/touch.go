package scripts

import (
	"context"

	"github.com/redis/go-redis/v9"
)

var touch = load("touch")

// Touch writes value to field of the hash key again if it holds it
// already, and reports whether it did: a write that changes nothing, after
// which a WAIT on the same connection covers every earlier write, another
// client's included (see touch.lua).
func Touch(ctx context.Context, rdb redis.Scripter, key, field, value string) (bool, error) {
	v, err := touch.Run(ctx, rdb, []string{key}, field, value)
	return decode(v, err, isOne)
}
