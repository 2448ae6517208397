package core

import "github.com/redcoord/redcoord/internal/errs"

// ApplyOptions is the one way every redcoord package applies its functional
// options: each package declares `type Option func(*options) error` over an
// unexported options struct, and its constructor calls ApplyOptions, so that
// a bad option is an error that names it, and nothing is half applied past
// it. It applies opts to o in order and returns the first error: a nil
// option, or what an option returned.
func ApplyOptions[T any, O ~func(*T) error](o *T, opts []O) error {
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
