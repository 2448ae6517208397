package obs

import "context"

// housekeeping is the context key of Housekeeping.
type housekeeping struct{}

// Housekeeping marks ctx as a Client's own traffic, which belongs to no
// operation (the server check, the notices subscription): round-trip
// counters skip it.
func Housekeeping(ctx context.Context) context.Context {
	return context.WithValue(ctx, housekeeping{}, true)
}

// IsHousekeeping reports whether ctx was marked by Housekeeping.
func IsHousekeeping(ctx context.Context) bool { return ctx.Value(housekeeping{}) != nil }
