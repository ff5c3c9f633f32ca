package wardpool

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool/pool"
)

// The inbox (inbox.go): a release that finds the mutex held leaves its
// resource for the holder, and every release of the mutex looks at it.

func TestReleaseNeverWaitsForTheMutex(t *testing.T) {
	// A release that finds the mutex held leaves its resource in the inbox
	// and returns; the holder gives it to the pool before letting go, as a
	// Give at the instant it came back.
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 2}})
	a, b := mustAcquire(t, k), mustAcquire(t, k)
	k.lock() // a long decision, say
	done := make(chan struct{})
	go func() {
		a.Release()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		k.unlock()
		t.Fatal("Release waited for the mutex")
	}
	if w := k.slot.Load(); k.p.Idle() != 0 || w&shut == 0 || w&seatMask == 0 {
		k.unlock()
		t.Fatal("the return did not wait in the inbox")
	}
	k.unlock() // gives it in
	if s := k.Stats(); s.Idle != 1 || s.Busy != 1 {
		t.Fatalf("after the holder let go: %+v", s.Books)
	}
	if l := mustAcquire(t, k); l.Value() != a.Value() {
		t.Fatal("the returned resource was not lent next")
	} else {
		l.Release()
	}
	b.Release()
	checkBalanced(t, k, d)
}

func TestReturnInInboxServesWaiterWhenCounterHolderLetsGo(t *testing.T) {
	// A holder that takes the mutex only to touch counters (the end of a
	// dial, a closer, a cancelled waiter) must give in the returns that
	// arrived meanwhile as it lets go: otherwise a return whose releaser
	// found the mutex held stays in the inbox with a caller queued for it,
	// and nobody comes to take it in.
	d := &dialer{}
	k, _ := newTestKeeper(t, d, Config[*res]{Limits: pool.Limits{Size: 1}})
	a := mustAcquire(t, k)
	got := make(chan Loan[*res], 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l, err := k.Acquire(ctx)
		if err != nil {
			t.Errorf("the queued Acquire: %v", err)
		}
		got <- l
	}()
	for k.Stats().Waiting != 1 {
		runtime.Gosched()
	}
	k.mu.Lock() // a counter-only holder
	a.Release() // finds the mutex held: into the inbox
	if w := k.slot.Load(); w&shut == 0 || w&seatMask == 0 {
		k.mu.Unlock()
		t.Fatal("the return did not wait in the inbox")
	}
	k.unlockMu()
	l := <-got
	if l.Value() != a.Value() {
		t.Fatalf("the waiter got %v, want the returned %v", l.Value(), a.Value())
	}
	l.Release()
	checkBalanced(t, k, d)
}

func TestEveryUnlockLooksAtTheInbox(t *testing.T) {
	// Only unlock and unlockMu may release k.mu bare: every other release
	// of the mutex goes through them, so that none leaves a return in the
	// inbox while the mutex is free.
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		bare := 0
		for i, line := range strings.Split(string(b), "\n") {
			if !strings.Contains(line, "k.mu.Unlock()") {
				continue
			}
			if bare++; f == "lane.go" && bare <= 2 {
				continue // unlock and unlockMu themselves
			}
			t.Errorf("%s:%d releases k.mu without looking at the inbox: use unlock or unlockMu", f, i+1)
		}
	}
}
