package redcoordotel

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel/metric"

	"github.com/redcoord/redcoord"
)

// Lease records the lease of the clients' watchdog-renewed holds
// (redcoord.Client.LeaseTTL) as the gauge redcoord.lease, in seconds: the
// shortest, if they differ, since their watchdogs' ticks share one
// histogram. The watchdog renews a lease every third of it, so a dashboard
// sets redcoord.renewal.duration against a third of this gauge. Call it
// once per MeterProvider, after redcoord.New, with the MeterProvider given
// to Observer; Unregister the Registration when the Clients are closed. It
// returns an ErrInvalidArgument for a nil mp, no clients or a nil one.
func Lease(mp metric.MeterProvider, clients ...*redcoord.Client) (metric.Registration, error) {
	if mp == nil {
		return nil, fmt.Errorf("%w: redcoordotel.Lease: nil MeterProvider", redcoord.ErrInvalidArgument)
	}
	if len(clients) == 0 {
		return nil, fmt.Errorf("%w: redcoordotel.Lease: no Client given", redcoord.ErrInvalidArgument)
	}
	shortest := clients[0]
	for i, c := range clients {
		if c == nil {
			return nil, fmt.Errorf("%w: redcoordotel.Lease: Client %d of %d is nil",
				redcoord.ErrInvalidArgument, i+1, len(clients))
		}
		if c.LeaseTTL() < shortest.LeaseTTL() {
			shortest = c
		}
	}
	m := mp.Meter(scope)
	g, err := m.Float64ObservableGauge("redcoord.lease", metric.WithUnit("s"),
		metric.WithDescription("The lease of watchdog-renewed holds; the watchdog renews every third of it"))
	if err != nil {
		return nil, err
	}
	seconds := shortest.LeaseTTL().Seconds()
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveFloat64(g, seconds)
		return nil
	}, g)
}
