package rsemaphore

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/core"
	"github.com/redcoord/redcoord/internal/hub"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/wait"
)

// What both semaphores do with their Client's one registration per name
// (see core.Waits): the unfair Semaphore's blocked acquires and the
// ExpirableSemaphore's wait in a local queue behind it, on clientCh, the
// Client's channel for the name.

// beatFunc returns the watchdog's renewal of the registration of client,
// which lives ttl without one.
type beatFunc func(client string, ttl time.Duration) (*redis.Script, []string, []any)

// registered records that a try sent at since registered the Client: one
// heartbeat, renewing by beat, keeps the registration while its blocked
// acquires wait.
func (h *handle) registered(wt core.Sized, since time.Time, beat beatFunc) error {
	return wt.Registered(since, func() *lease.Heartbeat {
		script, keys, args := beat(h.S.ID, h.TTL())
		return lease.NewHeartbeat(h.S.Watchdog, lease.Renewal{Script: script, Keys: keys, Args: args})
	})
}

// exit ends an acquire's part in its Client's blocked acquires of the
// name. When its try or its leave took the Client out of the registry
// (dropped) while other blocked acquires of the Client came in meanwhile
// (they joined without a try), it wakes the longest-waiting of them, whose
// try registers the Client again. The last one, when its own try or leave
// did not drop the registration, drops it with unregister (see
// core.Wait.Exit), which runs the semaphore's leave for the request id req
// of the Client's own, as the Client's last waiter's.
func (h *handle) exit(wt core.Sized, dropped bool, clientCh string, unregister func(ctx context.Context, req string)) {
	drop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait.LeaveTimeout)
		defer cancel()
		unregister(ctx, h.NextRequest())
	}
	if dropped {
		drop = nil
	}
	if wt.Exit(drop) && dropped {
		if hb, err := h.S.Hub(); err == nil && hb != nil {
			hb.WakeOne(clientCh)
		}
	}
}

// localWaiters reports whether acquires of the Client wait through the
// registry key, so that a release hands its permits on to them (see
// handOn) and the script wakes other Clients only with what is left.
func (h *handle) localWaiters(key string) bool {
	return h.S.Woken() && h.S.Waits.Waiting(key)
}

// failedOn wakes every blocked acquire of the Client on clientCh after its
// release failed, or was found applied by an earlier copy: it may have
// been applied, the hand-on its reply carried lost with it, and how many
// permits it left free is not known. Each woken acquire tries (a spurious
// wake costs a try, a lost one a poll).
func (h *handle) failedOn(clientCh string) {
	if hb, err := h.S.Hub(); err == nil && hb != nil {
		hb.Deliver(clientCh, hub.All())
	}
}

// handOn wakes the Client's blocked acquires on clientCh after its release
// of n permits: as a message "n:<own>" would, when the script counted the
// Client among the registered ones (own > 0); otherwise (its registration
// was woken and its waiter's try is on the way) those that fit in n beyond
// what waiters already woken here ask for.
func (h *handle) handOn(clientCh string, own, n int64) {
	if own <= 0 {
		h.wakeFree(clientCh, n)
	} else if hb, err := h.S.Hub(); err == nil && hb != nil {
		hb.WakeN(clientCh, own)
	}
}

// wakeFree wakes the Client's blocked acquires on clientCh that fit in n
// free permits, beyond what those with a wake pending ask for, and never
// one that does not fit (see hub.Hub.WakeFree): for a wake that an
// acquire gave up and that its Client keeps.
func (h *handle) wakeFree(clientCh string, n int64) {
	if hb, err := h.S.Hub(); err == nil && hb != nil {
		hb.WakeFree(clientCh, n)
	}
}
