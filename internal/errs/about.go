package errs

import "strings"

// About returns err naming the primitive of kind named name (see Tag),
// after the words of the sentinel that begins its message and before its
// detail: "redcoord: not held: rlock "orders": not held by this handle",
// "redcoord: not acquired: rlock "orders": context canceled". An err that
// names the primitive already is returned as it is. It matches what err
// matches; About returns nil for nil.
func About(kind, name string, err error) error {
	if err == nil || names(err, Tag(kind, name)) {
		return err
	}
	return &Error{Kind: kind, Name: name, Cause: err}
}

// Named is About for the primitive that tag names (see Tag, TagNames).
func Named(tag string, err error) error {
	if err == nil || names(err, tag) {
		return err
	}
	return &Error{Of: tag, Cause: err}
}

// names reports whether an Error in err's tree is about the primitive tag
// names, or a part of it (an Of of tag, a colon and the part).
func names(err error, tag string) bool {
	for depth := 0; err != nil && depth < 100; depth++ {
		switch e := err.(type) {
		case *Error:
			if s := e.subject(); s == tag || strings.HasPrefix(s, tag+": ") {
				return true
			}
		case interface{ Unwrap() []error }:
			for _, x := range e.Unwrap() {
				if names(x, tag) {
					return true
				}
			}
			return false
		}
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		err = u.Unwrap()
	}
	return false
}
