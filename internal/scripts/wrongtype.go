package scripts

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/errs"
)

var keyTypes = load("key_types")

// fail turns the error of a run of s on keys into the error its caller
// returns (see wrap), naming the key of another type for a WRONGTYPE:
// "redcoord: key holds another type: key rc:{s}:permits holds a string".
// The scripts' own kind checks name the key; Redis's error does not, and
// the key is then found by asking for the types of keys (key_types.lua),
// which costs a round trip on this path only. A refusal of the server
// matches errs.ErrRefused and names the command (see refused).
func (s *Script) fail(ctx context.Context, rdb redis.Scripter, keys []string, err error) error {
	if rerr := s.refused(ctx, rdb, keys, err); rerr != nil {
		return rerr
	}
	detail, ok := wrongType(err)
	if !ok {
		return s.wrap(err)
	}
	for _, k := range keys {
		if strings.HasPrefix(detail, k+" ") {
			return errs.New(errs.ErrWrongType, "key %s", detail)
		}
	}
	if key, typ := wrongKey(ctx, rdb, keys); key != "" {
		return errs.New(errs.ErrWrongType, "key %s holds a %s", key, typ)
	}
	return s.wrap(err)
}

// wrongKey returns the key of keys that holds a type redcoord never
// writes there, and that type: the first key, which every script keeps a
// hash in, when it holds another type, or else the first key that holds a
// string. It returns "" when it cannot tell.
func wrongKey(ctx context.Context, rdb redis.Scripter, keys []string) (key, typ string) {
	if len(keys) == 0 {
		return "", ""
	}
	types, err := RunBySHA(ctx, rdb, keyTypes.Script, keys).StringSlice()
	if err != nil || len(types) != len(keys) {
		return "", ""
	}
	if t := types[0]; t != "none" && t != "hash" {
		return keys[0], t
	}
	for i, t := range types {
		if t == "string" {
			return keys[i], t
		}
	}
	return "", ""
}

// wrongType returns the detail of a WRONGTYPE error from Redis or from a
// script's kind check, without the script's location that Redis 7 or
// miniredis append.
func wrongType(err error) (detail string, ok bool) {
	msg := err.Error()
	i := strings.Index(msg, "WRONGTYPE")
	if i < 0 {
		return "", false
	}
	detail = strings.TrimSpace(strings.TrimPrefix(msg[i:], "WRONGTYPE"))
	for _, tail := range []string{" script:", " stack traceback:"} {
		if j := strings.Index(detail, tail); j >= 0 {
			detail = detail[:j]
		}
	}
	return detail, true
}
