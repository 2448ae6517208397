package chaos

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestBeliefOutlivesFailedUnlock plays a hold through the recorder: an
// Unlock that fails leaves the handle believing it holds, so another
// handle's hold of the name from then on is an exclusivity violation; the
// hold's Context ending ends the belief, and a hold taken after that is
// not one.
func TestBeliefOutlivesFailedUnlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.bubble = true
		names := []string{"n0"}
		lost := make(chan struct{})
		r.acquired(1, 0, 0, false, names, hold{tokens: map[string]uint64{"n0": 1}, lost: lost})
		ctx, cancel := context.WithCancel(context.Background())
		r.watchCtx(0, false, ctx, func() {})

		time.Sleep(time.Millisecond)
		u := r.unlockCall(0, false)
		if !r.holding(0, false) {
			t.Fatal("the belief ended when Unlock was called")
		}
		time.Sleep(time.Millisecond)
		if broke := r.unlocked(u, "error: i/o timeout", nil); broke != "" {
			t.Fatalf("a failed Unlock broke the contract: %s", broke)
		}
		if !r.holding(0, false) {
			t.Fatal("the belief ended with an Unlock that failed")
		}

		time.Sleep(time.Millisecond)
		r.acquired(2, 1, 1, false, names, hold{tokens: map[string]uint64{"n0": 2}})
		time.Sleep(time.Millisecond)
		cancel()          // the library ends the hold's Context: its lease may have run out
		time.Sleep(apart) // the watcher looks whether Lost closed with it
		synctest.Wait()
		if r.holding(0, false) {
			t.Fatal("the belief outlived the hold's Context")
		}
		r.unlocked(r.unlockCall(1, false), "ok", nil)
		time.Sleep(time.Millisecond)
		r.acquired(3, 2, 2, false, names, hold{tokens: map[string]uint64{"n0": 3}})
		r.finish()

		c := rlockPrim{}.caps()
		vs := checkHolds(c, r.holds, nil)
		if len(vs) != 1 || vs[0].b.seq != 2 || vs[0].a.endHow != "ctx" {
			t.Fatalf("want one violation, by hold #2 beside h0's hold ended by its Context; got %v", vs)
		}
		t.Logf("%s", vs[0].msg)
	})
}

// TestBeliefEndsWithUnlock: an Unlock that returns nil ends the belief
// when it returns, not when it is called; one that returns nil after the
// hold's Lost closed, or ErrLeaseLost while Lost is open, breaks the
// contract.
func TestBeliefEndsWithUnlock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		names := []string{"n0"}
		lost := make(chan struct{})
		r.acquired(1, 0, 0, false, names, hold{tokens: map[string]uint64{"n0": 1}, lost: lost})
		r.watchCtx(0, false, context.Background(), func() {})
		time.Sleep(time.Millisecond)
		u := r.unlockCall(0, false)
		time.Sleep(time.Millisecond)
		if broke := r.unlocked(u, "ok", nil); broke != "" {
			t.Fatalf("a plain Unlock broke the contract: %s", broke)
		}
		if hr := r.holds[0]; hr.open || hr.end != 2*time.Millisecond || hr.endHow != "unlock" {
			t.Fatalf("hold after Unlock returned: open %v, end %v, how %q", hr.open, hr.end, hr.endHow)
		}

		r.acquired(2, 0, 0, false, names, hold{tokens: map[string]uint64{"n0": 2}, lost: lost})
		close(lost)
		synctest.Wait()
		u = r.unlockCall(0, false)
		if broke := r.unlocked(u, "ok", nil); !strings.Contains(broke, "after the hold's Lost closed") {
			t.Fatalf("Unlock nil after Lost closed: got %q", broke)
		}

		lost2 := make(chan struct{})
		r.acquired(3, 0, 0, false, names, hold{tokens: map[string]uint64{"n0": 3}, lost: lost2})
		r.watchCtx(0, false, context.Background(), func() {})
		u = r.unlockCall(0, false)
		if broke := r.unlocked(u, "lost", nil); !strings.Contains(broke, "while the hold's Lost was open") {
			t.Fatalf("ErrLeaseLost with Lost open: got %q", broke)
		}

		// A hold without a Context (a Semaphore's permit) ends at the call.
		r.acquired(4, 1, 1, false, names, hold{})
		time.Sleep(time.Millisecond)
		r.unlockCall(1, false)
		if r.holding(1, false) {
			t.Fatal("a hold without a Context outlived its Release's call")
		}
		r.finish()
	})
}

// TestReentryReleaseEndsNothing: releasing a re-entry leaves the belief,
// and the last release ends it.
func TestReentryReleaseEndsNothing(t *testing.T) {
	r := newRecorder()
	names := []string{"n0"}
	hd := hold{tokens: map[string]uint64{"n0": 1}}
	r.acquired(1, 0, 0, false, names, hd)
	r.acquired(2, 0, 0, false, names, hd) // a re-entry
	u := r.unlockCall(0, false)
	r.unlocked(u, "ok", func(bool) bool { return true })
	if !r.holding(0, false) {
		t.Fatal("the release of a re-entry ended the belief")
	}
	u = r.unlockCall(0, false)
	r.unlocked(u, "ok", func(bool) bool { return false })
	if r.holding(0, false) || r.holds[0].endHow != "unlock" {
		t.Fatal("the last release left the belief")
	}
}

// TestFailedUnlockAfterContext: an Unlock whose call ends the hold's
// Context (as the library's does) ends the belief while it is in flight;
// when it then fails, its return is still recorded, for the lease it
// leaves behind (see remnantEnd).
func TestFailedUnlockAfterContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.bubble = true
		r.acquired(1, 0, 0, false, []string{"n0"}, hold{tokens: map[string]uint64{"n0": 1}})
		ctx, cancel := context.WithCancel(context.Background())
		r.watchCtx(0, false, ctx, cancel)
		time.Sleep(time.Millisecond)
		u := r.unlockCall(0, false)
		cancel()
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if r.holding(0, false) || r.holds[0].endHow != "unlock" {
			t.Fatalf("the belief outlived the Context its Unlock ended: open %v, how %q", r.holds[0].open, r.holds[0].endHow)
		}
		r.unlocked(u, "error: i/o timeout", nil)
		if hr := r.holds[0]; hr.unlockRet != 2*time.Millisecond {
			t.Fatalf("the failed Unlock's return: got %v, want 2ms", hr.unlockRet)
		}
		r.finish()
	})
}
