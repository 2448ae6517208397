package main

import (
	"context"
	"fmt"
	"math/rand/v2"
)

// rwLockNames are the rwlock scenario's contenders, in the order they run:
// rrwlock, and rlock as the baseline, which takes reads exclusively too.
var rwLockNames = []string{"rrwlock", "rlock"}

// rwLocker is a worker's handle on a read-write lock.
type rwLocker interface {
	locker
	RLock(ctx context.Context) error
	RUnlock(ctx context.Context) error
}

// rwContenders returns the rwlock scenario's contenders.
func rwContenders(cfg *config) []contender { return named(cfg, rwLockNames) }

// mixSeed seeds each worker's draw of reads and writes, so that every
// contender's workers draw the same sequence.
const mixSeed = 0x72776c6f636b

// runRW runs one cell of the rwlock scenario: every worker draws each
// acquisition, a read with a chance of readPct in 100, else a write, and
// takes, holds and releases it until cfg.duration passes or ctx is done. A
// handle that is not an rwLocker (rlock) takes its reads as writes, but
// the harness still counts them as reads.
func runRW(ctx context.Context, f *fleet, cfg *config, ct contender, readPct int) rwRow {
	r := newRecorder(len(f.locks), f.names, 1, cfg.duration)
	next := make([]func() take, len(f.locks))
	for w, lk := range f.locks {
		write := take{lock: lk.Lock, unlock: lk.Unlock}
		read := take{shared: true, lock: lk.Lock, unlock: lk.Unlock}
		if rw, ok := lk.(rwLocker); ok {
			read.lock, read.unlock = rw.RLock, rw.RUnlock
		}
		rng := rand.New(rand.NewPCG(uint64(w), mixSeed))
		next[w] = func() take {
			if rng.IntN(100) < readPct {
				return read
			}
			return write
		}
	}
	elapsed, c := drive(ctx, f, cfg, r, next)
	row := rwRow{
		Mix:          mixName(readPct),
		ReadPct:      readPct,
		common:       r.common(ct.name, len(f.procs), elapsed, c),
		Reads:        r.reads,
		WriteWaitP99: ms(r.writeWaits, 99),
		MaxReaders:   r.maxReaders,
		ME:           r.me,
	}
	row.Writes = row.Acquisitions - row.Reads
	return row
}

// mixName names a mix by its share of reads, in percent: "read-mostly 95%".
func mixName(readPct int) string {
	kind := "write-heavy"
	switch {
	case readPct == 100:
		kind = "read-only"
	case readPct > 50:
		kind = "read-mostly"
	case readPct == 0:
		kind = "write-only"
	}
	return fmt.Sprintf("%s %d%%", kind, readPct)
}

// compare sets each row's XRlock from the first rlock row of the same mix,
// worker count and Client count that has any acquisitions.
func compare(rows []rwRow) {
	for i := range rows {
		for _, b := range rows {
			if b.Lock == "rlock" && b.ReadPct == rows[i].ReadPct && b.Workers == rows[i].Workers &&
				b.Procs == rows[i].Procs && b.AcqPerSec > 0 {
				rows[i].XRlock = rows[i].AcqPerSec / b.AcqPerSec
				break
			}
		}
	}
}
