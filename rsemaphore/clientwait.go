package rsemaphore

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcoord/redcoord/internal/hub"
	"github.com/redcoord/redcoord/internal/lease"
	"github.com/redcoord/redcoord/internal/scripts"
)

// What both semaphores do with their Client's one registration per name
// (see core.ClientWaits): the unfair Semaphore's blocked acquires and the
// ExpirableSemaphore's wait in a local queue behind it, on clientCh, the
// Client's channel for the name.

// beatFunc returns the watchdog's renewal of the registration of client,
// which lives ttl without one.
type beatFunc func(client string, ttl time.Duration) (*redis.Script, []string, []any)

// registrant is what a semaphore's blocked acquires need for their
// Client's registration (see core.Registrant): beat renews it, unregister
// takes the Client out of the registry by a leave of its own request req,
// as the Client's last waiter's.
type registrant struct {
	h          *handle
	beat       beatFunc
	unregister func(ctx context.Context, req string)
}

// Beat makes the heartbeat of the Client's registration.
func (r *registrant) Beat() *lease.Heartbeat {
	script, keys, args := r.beat(r.h.S.ID, r.h.TTL())
	return lease.NewHeartbeat(r.h.S.Watchdog, lease.Renewal{Script: script, Keys: keys, Args: args})
}

// Drop takes the Client out of the registry, by a leave of a request
// never sent.
func (r *registrant) Drop(ctx context.Context) { r.unregister(ctx, r.h.NextRequest()) }

// semWait is what a try does with the waiter registry when its registry
// mode is reg, behind the fewest permits least the Client's other blocked
// acquires ask for (see core.ClientWaiter.ModeBehind); otherwise for an acquire
// that never registers (NoRegistry).
func semWait(reg scripts.Registry, least int64, otherwise scripts.SemWait) scripts.SemWait {
	switch reg {
	case scripts.NoRegistry:
		return otherwise
	case scripts.Unregister:
		return scripts.SemUnregister
	}
	return scripts.SemRegister.Behind(least)
}

// localWaiters reports whether acquires of the Client wait through the
// registry key, so that a release hands its permits on to them (see
// handOn) and the script wakes other Clients only with what is left.
func (h *handle) localWaiters(key string) bool {
	return h.S.Woken() && h.S.ClientWaits.Waiting(key)
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
