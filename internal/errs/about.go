package errs

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Tag names a primitive in messages, by its kind and its quoted name:
// `rlock "orders:42"`.
func Tag(kind, name string) string { return kind + " " + strconv.Quote(name) }

// About returns err naming the primitive of kind named name (see Tag),
// after the words of the sentinel that begins its message and before its
// detail: "redcoord: not held: rlock "orders": not held by this handle",
// "redcoord: not acquired: rlock "orders": context canceled". The message
// has one "redcoord: " however many sentinels err wraps, and an err that
// names the primitive already keeps its wording. It matches what err
// matches; About returns nil for nil.
func About(kind, name string, err error) error {
	if err == nil {
		return nil
	}
	return Named(Tag(kind, name), err)
}

// TagNames is Tag for a primitive made of several names:
// `rlock.MultiMutex ["a" "b"]`.
func TagNames(kind string, names []string) string { return kind + " " + fmt.Sprintf("%q", names) }

// Named is About for the primitive that tag names (see Tag, TagNames).
func Named(tag string, err error) error {
	if err == nil {
		return nil
	}
	var a *aboutError
	if errors.As(err, &a) && a.tag == tag {
		return err
	}
	return &aboutError{tag: tag, err: err}
}

type aboutError struct {
	tag string
	err error
}

// sentinelWords are the sentinels' messages without the prefix, the
// words a message may begin with.
var sentinelWords = func() []string {
	var w []string
	for _, s := range []error{ErrNotAcquired, ErrNotHeld, ErrLeaseLost, ErrClosed, ErrInvalidArgument,
		ErrWrongType, ErrNotReplicated, ErrUpgrade, ErrNotSet, ErrSubscribeRefused} {
		w = append(w, strings.TrimPrefix(s.Error(), prefix))
	}
	return w
}()

func (e *aboutError) Error() string {
	rest := strings.ReplaceAll(e.err.Error(), prefix, "")
	var head string
	for _, w := range sentinelWords {
		if rest == w || strings.HasPrefix(rest, w+": ") {
			head, rest = w+": ", strings.TrimPrefix(strings.TrimPrefix(rest, w), ": ")
			break
		}
	}
	if !names(rest, e.tag) {
		if rest == "" {
			rest = e.tag
		} else {
			rest = e.tag + ": " + rest
		}
	}
	return prefix + head + rest
}

// names reports whether msg names the primitive tag: tag followed by the
// end, a colon or a space.
func names(msg, tag string) bool {
	for from := 0; ; {
		i := strings.Index(msg[from:], tag)
		if i < 0 {
			return false
		}
		end := from + i + len(tag)
		if end == len(msg) || msg[end] == ':' || msg[end] == ' ' {
			return true
		}
		from = end
	}
}

// Unwrap returns the error named, for errors.Is and errors.As.
func (e *aboutError) Unwrap() error { return e.err }
