package core

// Ref is embedded in redcoord.Client, under an unexported name, so that the
// module's own packages reach the Client's Session and nothing else does:
// Of finds it through Ref's unexported method, which the embedding promotes
// and which no type outside this package can declare.
type Ref struct{ s *Session }

// NewRef returns the Ref of s.
func NewRef(s *Session) Ref { return Ref{s} }

func (r Ref) session() *Session { return r.s }

// Of returns the Session of c, a non-nil *redcoord.Client, or nil when c is
// something else.
func Of(c any) *Session {
	if r, ok := c.(interface{ session() *Session }); ok {
		return r.session()
	}
	return nil
}
