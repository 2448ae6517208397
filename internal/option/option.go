// Package option is the one way every redcoord package applies its
// functional options: each package declares `type Option func(*options)
// error` over an unexported options struct, and its constructor calls
// Apply, so that a bad option is an error that names it, and nothing is
// half applied past it.
package option

import "github.com/redcoord/redcoord/internal/errs"

// Apply applies opts to o in order and returns the first error: a nil
// option, or what an option returned.
func Apply[T any, O ~func(*T) error](o *T, opts []O) error {
	for _, opt := range opts {
		if opt == nil {
			return errs.Invalid("opts", "nil Option")
		}
		if err := opt(o); err != nil {
			return err
		}
	}
	return nil
}
