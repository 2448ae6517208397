package core

import (
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redcoord/redcoord/internal/hub"
	"github.com/redcoord/redcoord/internal/obs"
)

// listenRetry is how long a Client whose listener could not subscribe
// waits before a later hold starts another.
const listenRetry = 30 * time.Second

// Notices ends this Client's holds that another handle forced out
// (ForceUnlock) as soon as the force's message arrives, instead of at
// their next renewal. A force script tells each forced-out owner's Client
// "!<part> <owner> <token>" (see tell_forced in lib.lua) on a channel
// whose prefix NoticePrefix gives; the Hub passes it to Hear, which ends
// the owner's hold of that part if its token is not above the message's:
// a hold taken since has a greater token, and a stale message spares it.
//
// Outside Cluster the channel is the Client's own, "<prefix>:ch:<client
// id>": the first hold the Client takes starts a listener that opens the
// Hub and subscribes to it, once for the Client's life, in the background,
// so that no acquire waits for it. A hold taken before that subscription
// is confirmed, or whose message is lost (a reconnect), is found at its
// next renewal, as every hold lost otherwise is. On Cluster a script may
// publish only within its slot: the channel is the name's channel for the
// Client ("<prefix>:{<name>}:ch:<client id>"), which the Client hears only
// while it waits on that name; elsewhere the renewal finds it. A Client
// that polls (WithPolling) hears none.
type Notices struct {
	s       *Session
	never   bool   // no listener: the Client polls, or Redis is a Cluster
	channel string // the Client's own channel, where notices arrive outside Cluster

	mu    sync.Mutex             // guards the fields below
	holds [2]map[string]Forcible // by owner: the holds of lock hashes, then read holds
	// forced is the greatest token of a lock hash's hold that a notice
	// named while the owner had no hold listed, kept until the owner's
	// next Add (at most forcedKept owners): a grant that a release made
	// and a force ended before its grantee recorded the hold (see Told).
	forced    map[string]uint64
	listening bool      // a listener runs, or has subscribed
	retryAt   time.Time // when a failed listener may be started again
	closed    bool      // by the Session's Close: no listener starts
}

// Held names a hold that a notice may end: the owner's hold of the lock
// hash, or its read hold (rrwlock).
type Held struct {
	Owner string
	Read  bool
}

// Forcible is a hold that a notice may end: ForcedUpTo ends it if its
// token is not above token.
type Forcible interface {
	ForcedUpTo(token uint64)
}

// forcedKept bounds Notices.forced: a record dropped leaves a forced grant
// to be found at its first renewal, as a notice lost is.
const forcedKept = 256

func newNotices(s *Session) *Notices {
	return &Notices{s: s, never: s.Config.Polling || s.Cluster(), channel: s.ClientKey(ChanNotices, s.ID),
		holds:  [2]map[string]Forcible{make(map[string]Forcible), make(map[string]Forcible)},
		forced: make(map[string]uint64)}
}

// Told reports whether a grant of the hold of token to owner, announced by
// the message that woke sub, can be taken as the hold without asking
// Redis whether a ForceUnlock ended it since: this Client's channel was
// subscribed, on the connection that brought the grant, before it, so a
// force's notice, published after the grant, arrives after it (see
// hub.Subscription.Heard), and none has arrived so far. A notice that
// arrives before the hold is recorded is found by Add.
func (n *Notices) Told(sub *hub.Subscription, owner string, token uint64) bool {
	if sub == nil || !sub.Heard(n.channel) {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return !n.never && n.forced[owner] < token
}

// of returns the map of k's part.
func (n *Notices) of(k Held) map[string]Forcible {
	if k.Read {
		return n.holds[1]
	}
	return n.holds[0]
}

// NoticePrefix returns the prefix of the channel on which a force of name
// tells a forced-out holder's Client; the Client's id follows (see
// Notices).
func (s *Session) NoticePrefix(name string) string {
	if s.Cluster() {
		return s.KeyTail(name, ChanNameClient, "")
	}
	return s.notices
}

// Add lists f, the hold of token, as the hold k until Remove, and starts
// the listener if it is not running. It reports whether a notice heard
// before named a hold of k's owner with token or a later one: the hold was
// forced before it was recorded (see Told).
func (n *Notices) Add(k Held, f Forcible, token uint64) (forced bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !k.Read {
		if t, ok := n.forced[k.Owner]; ok {
			forced = t >= token
			delete(n.forced, k.Owner)
		}
	}
	n.of(k)[k.Owner] = f
	if !n.listening && !n.never && !n.closed && !time.Now().Before(n.retryAt) {
		n.listening = true
		n.s.checks.Add(1)
		go n.listen()
	}
	return forced
}

// Remove stops listing f as the hold k.
func (n *Notices) Remove(k Held, f Forcible) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if m := n.of(k); m[k.Owner] == f {
		delete(m, k.Owner)
	}
}

// Hear ends the hold a notice's body, "<part> <owner> <token>", names, if
// it is listed; a body of another form is ignored. It runs on the Hub's
// reader.
func (n *Notices) Hear(body string) {
	part, rest, ok := strings.Cut(body, " ")
	owner, tok, ok2 := strings.Cut(rest, " ")
	token, err := strconv.ParseUint(tok, 10, 64)
	if !ok || !ok2 || err != nil || (part != "l" && part != "r") {
		return
	}
	n.mu.Lock()
	f := n.of(Held{Read: part == "r"})[owner]
	if part == "l" && f == nil {
		if _, ok := n.forced[owner]; !ok && len(n.forced) >= forcedKept {
			for o := range n.forced { // the one the map yields first
				delete(n.forced, o)
				break
			}
		}
		n.forced[owner] = max(n.forced[owner], token)
	}
	n.mu.Unlock()
	if f != nil {
		f.ForcedUpTo(token)
	}
}

// listen subscribes the Hub to the Client's own channel, for the Client's
// life (Hub.Pin: no waiter, the Hub's Close drops it). A
// failure leaves the next try to a hold taken listenRetry later, or to
// none when the server refused pub/sub for good.
func (n *Notices) listen() {
	defer n.s.checks.Done()
	h, err := n.s.Hub()
	if err == nil && h != nil {
		// Close cancels s.ctx; the subscription belongs to no operation.
		err = h.Pin(obs.Housekeeping(n.s.ctx), n.s.ClientKey(ChanNotices, n.s.ID))
	}
	if err == nil && h != nil {
		return
	}
	n.s.Config.Logger.Debug("redcoord: not listening for forced unlocks; "+
		"a forced-out hold is found at its next renewal", "err", err)
	refused := h == nil || h.Stats().Refused
	n.mu.Lock()
	defer n.mu.Unlock()
	n.listening = false
	n.retryAt = time.Now().Add(listenRetry)
	n.never = n.never || refused
}

// close has no listener start from now on; the Session's Close waits for
// one that runs.
func (n *Notices) close() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
}

// noticeOption is the Hub option that passes notices to n.
func (n *Notices) noticeOption() hub.Option { return hub.WithNotice(n.Hear) }
