package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/redcoord/redcoord/relection"
)

// relection: candidates of one election. Lock is Campaign, TryLock a
// Campaign whose context is already near its end, Unlock is Resign.
type relectionPrim struct{}

func (relectionPrim) caps() caps {
	return caps{servers: 1, capacity: 1, proclaim: true, fenced: true, context: true}
}

func (relectionPrim) setup(context.Context, *world) error { return nil }

func (relectionPrim) handle(w *world, p, i int, _ *rand.Rand) handle {
	return &electionHandle{e: relection.New(w.procs[p].clients[0], w.names[0]), name: w.names[0],
		value: fmt.Sprintf("p%d-%d", p, i)}
}

type electionHandle struct {
	unsupported
	e     *relection.Election
	name  string
	value string
	n     int // proclamations
}

func (h *electionHandle) names() []string { return []string{h.name} }

func (h *electionHandle) acquire(ctx context.Context, a acq) (bool, error) {
	if a.try {
		c, cancel := context.WithTimeout(ctx, maxPoll/4)
		defer cancel()
		ctx = c
	}
	err := h.e.Campaign(ctx, h.value)
	return err == nil, err
}

func (h *electionHandle) held(bool) hold {
	return hold{tokens: map[string]uint64{h.name: h.e.Token()}, lost: h.e.Lost()}
}

func (h *electionHandle) release(ctx context.Context, _ bool) error { return h.e.Resign(ctx) }

func (h *electionHandle) proclaim(ctx context.Context) error {
	h.n++
	return h.e.Proclaim(ctx, fmt.Sprintf("%s#%d", h.value, h.n))
}

func (h *electionHandle) context(p context.Context, _ bool) (context.Context, context.CancelFunc) {
	return h.e.Context(p)
}
