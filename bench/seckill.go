package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// answer is what an order got.
type answer int

const (
	noAnswer answer = iota // the lock or Redis failed before the stock was read
	bought
	soldOut
)

// runSeckill runs a flash sale: cfg.orders orders, cfg.concurrency at a
// time (one worker each), against a stock counter at stockKey. Each order
// takes the lock, reads the stock, writes it back one lower if any is left,
// and releases: a read-modify-write in two commands that only the lock keeps
// from selling one item twice.
func runSeckill(ctx context.Context, f *fleet, cfg *config, ct contender, stockKey string) (seckillRow, error) {
	sctx, cancel := unlockCtx()
	defer cancel()
	if err := f.client(0).Set(sctx, stockKey, cfg.stock, 0).Err(); err != nil {
		return seckillRow{}, err
	}
	f.reset(sctx)
	var (
		next               atomic.Int64
		sold, gone, failed atomic.Int64
		errCount           atomic.Int64
		mu                 sync.Mutex // protects latency, sample
		latency            = newHist()
		sample             string
		wg                 sync.WaitGroup
	)
	start := time.Now()
	for w, lk := range f.locks {
		rdb := f.client(w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(cfg.orders) && ctx.Err() == nil {
				t0 := time.Now()
				a, err := order(ctx, lk, rdb, stockKey, cfg.timeout)
				d := time.Since(t0)
				switch a {
				case bought:
					sold.Add(1)
				case soldOut:
					gone.Add(1)
				default:
					failed.Add(1)
				}
				mu.Lock()
				record(latency, d)
				if err != nil {
					errCount.Add(1)
					if sample == "" {
						sample = err.Error()
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	c := f.cost()
	gctx, gcancel := unlockCtx()
	defer gcancel()
	left, err := f.client(0).Get(gctx, stockKey).Int64()
	if err != nil {
		return seckillRow{}, err
	}
	row := seckillRow{
		Lock:        ct.name,
		Orders:      cfg.orders,
		Concurrency: len(f.locks),
		Procs:       len(f.procs),
		Stock:       cfg.stock,
		Seconds:     elapsed.Seconds(),
		Sold:        sold.Load(),
		SoldOut:     gone.Load(),
		Failed:      failed.Load(),
		Errors:      errCount.Load(),
		LatencyP50:  ms(latency, 50),
		LatencyP99:  ms(latency, 99),
		LatencyMax:  ms(latency, 100),
		StockLeft:   left,
		ErrorSample: sample,
	}
	done := row.Sold + row.SoldOut + row.Failed
	row.OrdersPerS = float64(done) / row.Seconds
	row.Oversold = row.Sold - (int64(cfg.stock) - left)
	row.RoundTrips, row.ServerUs = c.per(done)
	return row, nil
}

// order places one order. Its answer is what the stock said; an error from
// Unlock after an answer leaves the answer standing.
func order(ctx context.Context, lk locker, rdb redis.UniversalClient, stockKey string,
	timeout time.Duration) (answer, error) {
	octx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := lk.Lock(octx); err != nil {
		return noAnswer, err
	}
	// The critical section and the release get their own bound: a SET cut
	// short by the order's deadline might have sold an item nobody counts.
	uctx, ucancel := unlockCtx()
	defer ucancel()
	a, err := buy(uctx, rdb, stockKey)
	if uerr := lk.Unlock(uctx); err == nil {
		err = uerr
	}
	return a, err
}

// buy is the critical section: GET, then SET one lower.
func buy(ctx context.Context, rdb redis.UniversalClient, stockKey string) (answer, error) {
	n, err := rdb.Get(ctx, stockKey).Int64()
	switch {
	case err != nil:
		return noAnswer, err
	case n <= 0:
		return soldOut, nil
	}
	if err := rdb.Set(ctx, stockKey, n-1, 0).Err(); err != nil {
		return noAnswer, err
	}
	return bought, nil
}
