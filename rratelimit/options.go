package rratelimit

// Option configures a Limiter.
type Option func(*options) error

// options is what the Options set.
type options struct {
	failOpen bool
}

// WithFailOpen makes Allow admit, and Wait return at once, when Redis
// cannot be reached or cannot serve for the moment (a connection refused,
// reset or timed out, a server loading its data or failing over): the
// limit is then not enforced, and the observer's RateAdmitted event
// carries the error. Bad input, a key of another type and a done context
// are still errors. Use it where letting work through unlimited is better
// than stopping it, for a limit that protects nothing vital. The default is
// to fail closed: Allow and Wait return the error, which matches
// redcoord.ErrNotAcquired.
func WithFailOpen() Option {
	return func(o *options) error {
		o.failOpen = true
		return nil
	}
}
