// Package redcoordotel records a redcoord Client's events as OpenTelemetry
// metrics and spans, from the Client's observer (redcoord.WithObserver). It
// is a module of its own, as go-redis's redisotel is, so that the redcoord
// module does not require OpenTelemetry.
//
//	obs, err := redcoordotel.Observer(otel.GetMeterProvider(), otel.GetTracerProvider())
//	...
//	c, err := redcoord.New(rdb, redcoord.WithObserver(obs))
//	...
//	lease, err := redcoordotel.Lease(otel.GetMeterProvider(), c) // the gauge redcoord.lease
//
// Metrics, each with the attribute "primitive" (rlock, rfairlock, rrwlock,
// rsemaphore, rsemaphore-expirable, rlatch, relection, rratelimit) where it
// applies:
//
//	redcoord.wait              histogram, s: how long acquires waited; "outcome" acquired or ended
//	redcoord.waiters           up-down counter: acquires waiting now
//	redcoord.handoff           histogram, s: from the wake that ended a wait to the hold (redcoord.Event's Woken)
//	redcoord.hold              histogram, s: how long holds lasted; "outcome" released, lost or closed (by Close)
//	redcoord.leases.lost       counter: holds found lost (not those the Client's Close ended)
//	redcoord.renewals          counter: leases renewed by the watchdog's ticks
//	redcoord.renewal.duration  histogram, s: how long a tick's round trips took
//	redcoord.hub.reconnects    counter: Hub reconnects (on a Cluster, shard connections lost)
//	redcoord.hub.moves         counter: shard channels the Hub moved to another node
//	redcoord.rate.events       counter: events a rate limiter was asked for; "outcome" admitted, waited or refused
//	redcoord.rate.wait         histogram, s: how long rate limiter Waits slept, to their slot or their end
//	redcoord.lease             gauge, s: the Clients' lease, recorded by Lease
//
// The histograms in seconds suggest bucket bounds from half a millisecond
// to a minute (holds: a millisecond to an hour; hand-offs: 50µs to a
// second) in place of the SDK's default, which is made for milliseconds; a
// View overrides them.
// redcoord.leases.lost starts at zero for a primitive when the primitive
// first takes a hold, so that a query of its increase sees the process's
// first loss.
//
// Through a Prometheus exporter (go.opentelemetry.io/otel/exporters/prometheus,
// its default translation) the names become redcoord_wait_seconds,
// redcoord_leases_lost_total, redcoord_waiters, redcoord_lease_seconds and
// so on. The dashboards folder of this module has a Grafana dashboard and
// Prometheus alert rules on those names (docs/dashboard.md in the redcoord
// repository describes them).
//
// With a TracerProvider, each acquire that waited is also a span,
// "redcoord.acquire <primitive>", from its start to its end, with the
// name and the outcome as attributes, a child of the span in the context
// the acquire was called with.
package redcoordotel

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/redcoord/redcoord"
)

const scope = "github.com/redcoord/redcoord/redcoordotel"

// Observer returns a func for redcoord.WithObserver that records the
// Client's events with the meters of mp and, if tp is not nil, spans of
// tp's tracer. The func is quick: it records and returns.
func Observer(mp metric.MeterProvider, tp trace.TracerProvider) (func(redcoord.Event), error) {
	m := mp.Meter(scope)
	r := &recorder{}
	// From a loopback round trip to a minute; holds from a millisecond to an hour.
	latency := metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
		0.5, 1, 2.5, 5, 10, 30, 60)
	holds := metric.WithExplicitBucketBoundaries(0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600)
	// Hand-offs from a quick loopback wake (tens of µs) to a second.
	handoffs := metric.WithExplicitBucketBoundaries(0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
		0.025, 0.05, 0.1, 0.25, 1)
	var err error
	if r.wait, err = m.Float64Histogram("redcoord.wait", metric.WithUnit("s"), latency,
		metric.WithDescription("How long acquires waited, to a hold or to their end")); err != nil {
		return nil, err
	}
	if r.handoff, err = m.Float64Histogram("redcoord.handoff", metric.WithUnit("s"), handoffs,
		metric.WithDescription("How long acquires took from the wake that ended their wait to the hold")); err != nil {
		return nil, err
	}
	if r.hold, err = m.Float64Histogram("redcoord.hold", metric.WithUnit("s"), holds,
		metric.WithDescription("How long holds lasted, to their release, loss or the Client's Close")); err != nil {
		return nil, err
	}
	if r.lost, err = m.Int64Counter("redcoord.leases.lost", metric.WithDescription("Holds found lost")); err != nil {
		return nil, err
	}
	if r.renewals, err = m.Int64Counter("redcoord.renewals",
		metric.WithDescription("Leases renewed by the watchdog")); err != nil {
		return nil, err
	}
	if r.tick, err = m.Float64Histogram("redcoord.renewal.duration", metric.WithUnit("s"), latency,
		metric.WithDescription("How long a watchdog tick's round trips took")); err != nil {
		return nil, err
	}
	if r.reconnects, err = m.Int64Counter("redcoord.hub.reconnects",
		metric.WithDescription("Hub reconnects")); err != nil {
		return nil, err
	}
	if r.moves, err = m.Int64Counter("redcoord.hub.moves",
		metric.WithDescription("Shard channels moved to another node")); err != nil {
		return nil, err
	}
	if r.waiters, err = m.Int64UpDownCounter("redcoord.waiters",
		metric.WithDescription("Acquires waiting now")); err != nil {
		return nil, err
	}
	if r.rateEvents, err = m.Int64Counter("redcoord.rate.events",
		metric.WithDescription("Events a rate limiter was asked for, by outcome")); err != nil {
		return nil, err
	}
	if r.rateWait, err = m.Float64Histogram("redcoord.rate.wait", metric.WithUnit("s"), latency,
		metric.WithDescription("How long rate limiter Waits slept, to their slot or their end")); err != nil {
		return nil, err
	}
	if tp != nil {
		r.tracer = tp.Tracer(scope)
	}
	return r.record, nil
}

// recorder holds the instruments.
type recorder struct {
	wait, hold, tick, handoff         metric.Float64Histogram
	lost, renewals, reconnects, moves metric.Int64Counter
	waiters                           metric.Int64UpDownCounter
	rateEvents                        metric.Int64Counter
	rateWait                          metric.Float64Histogram
	tracer                            trace.Tracer // nil: no spans
	// counted holds the primitives (strings) whose redcoord.leases.lost
	// series exists: record adds zero for a primitive's first hold.
	counted sync.Map
}

// record records one event.
func (r *recorder) record(e redcoord.Event) {
	ctx := context.Background()
	if e.Context != nil {
		// The acquire's, for its values (its span is the parent, its trace
		// the exemplars'), not its end: a cancelled wait is recorded too.
		ctx = context.WithoutCancel(e.Context)
	}
	prim := attribute.String("primitive", e.Primitive)
	switch e.Kind {
	case redcoord.Waiting:
		r.waiters.Add(ctx, 1, metric.WithAttributes(prim))
	case redcoord.Acquired, redcoord.WaitEnded:
		if e.Kind == redcoord.Acquired {
			r.countLosses(ctx, e.Primitive, prim)
			if e.Woken > 0 {
				r.handoff.Record(ctx, e.Woken.Seconds(), metric.WithAttributes(prim))
			}
		}
		if e.Waited {
			r.waiters.Add(ctx, -1, metric.WithAttributes(prim))
		}
		outcome := "acquired"
		if e.Kind == redcoord.WaitEnded {
			outcome = "ended"
		}
		r.wait.Record(ctx, e.Wait.Seconds(), metric.WithAttributes(prim, attribute.String("outcome", outcome)))
		if r.tracer != nil && e.Waited {
			end := time.Now()
			_, span := r.tracer.Start(ctx, "redcoord.acquire "+e.Primitive, trace.WithTimestamp(end.Add(-e.Wait)),
				trace.WithAttributes(prim, attribute.String("name", e.Name), attribute.String("outcome", outcome)))
			if e.Err != nil {
				span.SetStatus(codes.Error, e.Err.Error())
			}
			span.End(trace.WithTimestamp(end))
		}
	case redcoord.Released, redcoord.LeaseLost:
		outcome := "released"
		switch {
		case e.Kind == redcoord.Released:
		case errors.Is(e.Err, redcoord.ErrClosed): // ended by its owner, not lost
			outcome = "closed"
		default:
			outcome = "lost"
			r.lost.Add(ctx, 1, metric.WithAttributes(prim))
		}
		r.hold.Record(ctx, e.Held.Seconds(), metric.WithAttributes(prim, attribute.String("outcome", outcome)))
	case redcoord.Renewed:
		r.renewals.Add(ctx, int64(e.Count))
		r.tick.Record(ctx, e.Took.Seconds())
	case redcoord.HubReconnected:
		r.reconnects.Add(ctx, 1)
	case redcoord.HubMoved:
		r.moves.Add(ctx, 1)
	case redcoord.RateAdmitted, redcoord.RateWaited, redcoord.RateRefused:
		outcome := "admitted"
		switch e.Kind {
		case redcoord.RateWaited:
			outcome = "waited"
			r.rateWait.Record(ctx, e.Wait.Seconds(), metric.WithAttributes(prim, attribute.String("outcome", "admitted")))
		case redcoord.RateRefused:
			outcome = "refused"
			if e.Waited { // a Wait that slept, then ended
				r.rateWait.Record(ctx, e.Wait.Seconds(), metric.WithAttributes(prim, attribute.String("outcome", "ended")))
			}
		}
		r.rateEvents.Add(ctx, int64(e.Count), metric.WithAttributes(prim, attribute.String("outcome", outcome)))
	}
}

// countLosses starts redcoord.leases.lost at zero for the primitive prim
// names, once: Prometheus's increase and rate see a counter's rise only
// from its second sample, so a series born at one would hide the first loss.
func (r *recorder) countLosses(ctx context.Context, primitive string, prim attribute.KeyValue) {
	if _, ok := r.counted.Load(primitive); ok {
		return
	}
	if _, loaded := r.counted.LoadOrStore(primitive, struct{}{}); !loaded {
		r.lost.Add(ctx, 0, metric.WithAttributes(prim))
	}
}
