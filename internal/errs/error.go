package errs

import (
	"fmt"
	"strconv"
	"strings"
)

// Error is an error of the module, told by its parts: what did not happen
// (Sentinel), which primitive (Kind and Name, or Of), the operation, the
// detail, the cause and a note. Error composes the message from them in
// that order, joined by ": " (the note by "; "), with one "redcoord: "
// however deep errors of this type nest:
//
//	redcoord: not acquired: rlock "orders:42": context canceled
//	 prefix   Sentinel      Kind and Name       Cause
//
// An Error with no Sentinel, Op or Detail (one About made to name a
// primitive) puts its Cause's sentinel words first, before the primitive,
// so that a message begins with what did not happen.
type Error struct {
	Sentinel error   // the sentinel matched and named first; nil for none
	Also     []error // further sentinels matched, not named (ErrNotHeld for a lost lease)

	Kind  string   // the primitive's kind: "rlock"; "" when Of or nothing names it
	Name  string   // the primitive's name, quoted
	Names []string // the names of a primitive made of several, instead of Name
	Of    string   // what the error is about, already worded (Tag, TagNames and a part)

	Op     string // the operation that failed: "acquire"
	Detail string // what went wrong, in words
	Cause  error  // why, matched by errors.Is and errors.As; its words follow the rest
	Note   string // words after the cause: "the new lease stands"
}

// New returns an Error matching sentinel, with a detail from format and a.
func New(sentinel error, format string, a ...any) *Error {
	return &Error{Sentinel: sentinel, Detail: fmt.Sprintf(format, a...)}
}

// Error returns the composed message.
func (e *Error) Error() string { return prefix + e.words() }

// Is reports whether target is one of the sentinels e matches itself.
func (e *Error) Is(target error) bool {
	if target == nil {
		return false
	}
	if e.Sentinel == target {
		return true
	}
	for _, s := range e.Also {
		if s == target {
			return true
		}
	}
	return false
}

// Unwrap returns the Cause.
func (e *Error) Unwrap() error { return e.Cause }

// words is the message without its prefix: the head (the sentinel's
// words), then the rest.
func (e *Error) words() string {
	head, rest := e.parts()
	return join(head, rest)
}

// hoists reports whether e has no words of its own before its cause, so
// that its cause's head becomes its own.
func (e *Error) hoists() bool {
	return e.Sentinel == nil && e.Op == "" && e.Detail == "" && e.Cause != nil
}

// parts returns the sentinel words that head the message and the words
// after them.
func (e *Error) parts() (head, rest string) {
	cause := ""
	switch {
	case e.Sentinel != nil:
		head, cause = Words(e.Sentinel), Words(e.Cause)
	case e.hoists():
		head, cause = split(e.Cause)
	default:
		cause = Words(e.Cause)
	}
	rest = join(e.subject(), e.Op, e.Detail, cause)
	if e.Note != "" {
		rest += "; " + e.Note
	}
	return head, rest
}

// subject names what e is about: Of, or Kind and Name(s) as Tag and
// TagNames word them.
func (e *Error) subject() string {
	switch {
	case e.Of != "":
		return e.Of
	case e.Names != nil:
		return TagNames(e.Kind, e.Names)
	case e.Kind != "":
		return Tag(e.Kind, e.Name)
	}
	return ""
}

// split returns err's head and rest as parts does, for any error.
func split(err error) (head, rest string) {
	switch e := err.(type) {
	case *Error:
		return e.parts()
	case *sentinel:
		return e.words, ""
	}
	return "", Words(err)
}

// Words returns err's message without the "redcoord: " an Error or a
// sentinel begins with; "" for nil. Other errors keep their message.
func Words(err error) string {
	switch e := err.(type) {
	case nil:
		return ""
	case *Error:
		return e.words()
	case *sentinel:
		return e.words
	}
	return err.Error()
}

// join joins the non-empty words with ": ".
func join(words ...string) string {
	var b strings.Builder
	for _, w := range words {
		if w == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(w)
	}
	return b.String()
}

// sentinel is an error that stands for itself, matched by identity.
type sentinel struct{ words string }

// Sentinel returns a new sentinel error whose message is "redcoord: "
// followed by words.
func Sentinel(words string) error { return &sentinel{words: words} }

func (s *sentinel) Error() string { return prefix + s.words }

// Tag names a primitive in messages, by its kind and its quoted name:
// `rlock "orders:42"`.
func Tag(kind, name string) string { return kind + " " + strconv.Quote(name) }

// TagNames is Tag for a primitive made of several names:
// `rlock.MultiMutex ["a" "b"]`.
func TagNames(kind string, names []string) string { return kind + " " + fmt.Sprintf("%q", names) }

// Of is New for an error about what (see Tag): "redcoord: not held:
// rlock "x": not held by this handle".
func Of(what string, sentinel error, format string, a ...any) *Error {
	return &Error{Sentinel: sentinel, Of: what, Detail: fmt.Sprintf(format, a...)}
}

// Noted returns err with note after its words, matching what err matches:
// "redcoord: not replicated: ...; the release stands".
func Noted(err error, note string) *Error { return &Error{Cause: err, Note: note} }

// Join is errors.Join for errors of the module: its message is each
// error's Words on a line of its own, with no "redcoord: " of its own, for
// the Cause of an Error. It returns nil when every err is nil.
func Join(errs ...error) error {
	var j joined
	for _, err := range errs {
		if err != nil {
			j = append(j, err)
		}
	}
	if j == nil {
		return nil
	}
	return j
}

type joined []error

func (j joined) Error() string {
	var b strings.Builder
	for i, err := range j {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(Words(err))
	}
	return b.String()
}

// Unwrap returns the errors joined, for errors.Is and errors.As.
func (j joined) Unwrap() []error { return j }

// Chain returns an error that matches err and cause, worded "<err's
// words>: <cause's words>" with no "redcoord: " of its own: a context's
// error and its cause, "context canceled: lease lost: rlock "x": ...".
func Chain(err, cause error) error { return &chain{err: err, cause: cause} }

type chain struct{ err, cause error }

func (c *chain) Error() string { return Words(c.err) + ": " + Words(c.cause) }

// Unwrap returns both errors, for errors.Is and errors.As.
func (c *chain) Unwrap() []error { return []error{c.err, c.cause} }
