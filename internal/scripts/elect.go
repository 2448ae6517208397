package scripts

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The election's own scripts (its others are the fair lock's: see Fair.Log).
var (
	electProclaim = loadFair("elect_proclaim")
	electLeader   = load("elect_leader")
	electLog      = load("elect_log")
)

// electScripts lists this file's scripts, for SHA.
var electScripts = []*Script{electProclaim, electLeader, electLog}

// Proclaim sets the value of the owner's leadership in term, and reports
// whether the owner still leads in that term. A value it had already is
// not logged again; a copy of a Proclaim of the term numbered up to req
// (a request id the handle made in its turn) changes nothing.
func (f Fair) Proclaim(ctx context.Context, rdb redis.Scripter, req string, term any, value string) (bool, error) {
	v, err := electProclaim.Run(ctx, rdb, f.keys(), f.args(term, value, req)...)
	return decode(v, err, isOne)
}

// Term is one leader's term, or one change of it in the log.
type Term struct {
	ID    string    // the log entry's id (in a Leader reply: the log's last, "0-0" for none)
	Term  uint64    // 0: nobody leads
	Value string    // what the leader proclaimed
	Since time.Time // when the term began, by the server's clock
	// Remaining is the leader's remaining lease (Leader only).
	Remaining time.Duration
}

// Leader reads who leads the election and where its log ends, at one
// moment: a Term with Term 0 when nobody leads.
func (f Fair) Leader(ctx context.Context, rdb redis.Scripter) (Term, error) {
	v, err := electLeader.Run(ctx, rdb, []string{f.Lock.Hash, f.Log()}, f.args()...)
	if err != nil {
		return Term{}, err
	}
	arr, ok := v.([]any)
	if !ok || (len(arr) != 1 && len(arr) != 5) {
		return Term{}, errUnexpected(v)
	}
	id, ok := arr[0].(string)
	if !ok {
		return Term{}, errUnexpected(v)
	}
	if len(arr) == 1 {
		return Term{ID: id}, nil
	}
	t, err := term(id, arr[1], arr[2], arr[3])
	if err != nil {
		return Term{}, errUnexpected(v)
	}
	pttl, ok := arr[4].(int64)
	if !ok {
		return Term{}, errUnexpected(v)
	}
	t.Remaining = time.Duration(pttl) * time.Millisecond
	return t, nil
}

// Changes returns at most n changes of leader logged after the entry id
// ("0-0": from the first), oldest first.
func (f Fair) Changes(ctx context.Context, rdb redis.Scripter, after string, n int) ([]Term, error) {
	v, err := electLog.Run(ctx, rdb, []string{f.Log()}, f.args(after, n)...)
	if err != nil {
		return nil, err
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, errUnexpected(v)
	}
	out := make([]Term, 0, len(arr))
	for _, x := range arr {
		e, ok := x.([]any)
		if !ok || len(e) != 4 {
			return nil, errUnexpected(v)
		}
		id, ok := e[0].(string)
		if !ok {
			return nil, errUnexpected(v)
		}
		t, err := term(id, e[1], e[2], e[3])
		if err != nil {
			return nil, errUnexpected(v)
		}
		out = append(out, t)
	}
	return out, nil
}

// term decodes a term, its value and its start, as the scripts reply them
// (the term a decimal string, the start a string or an integer).
func term(id string, t, value, since any) (Term, error) {
	ts, ok1 := t.(string)
	val, ok2 := value.(string)
	if !ok1 || !ok2 {
		return Term{}, errUnexpected(t)
	}
	n, err := strconv.ParseUint(ts, 10, 64)
	if err != nil {
		return Term{}, err
	}
	var ms int64
	switch s := since.(type) {
	case int64:
		ms = s
	case string:
		if ms, err = strconv.ParseInt(s, 10, 64); err != nil {
			return Term{}, err
		}
	default:
		return Term{}, errUnexpected(since)
	}
	return Term{ID: id, Term: n, Value: val, Since: time.UnixMilli(ms)}, nil
}
