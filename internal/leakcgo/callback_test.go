//go:build cgo && amd64 && linux

package leakcgo

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// TestLeakStackAcrossACgoCallback acquires with the leak watch on from a
// goroutine that C called back into, with C's frame pointer pointing at
// unmapped memory, and checks that the leak is reported with the Go frames
// of the callback (a walk that followed the frame pointer into C would
// crash the process instead; runtime.Callers, which the watch now uses,
// never does).
func TestLeakStackAcrossACgoCallback(t *testing.T) {
	clock := clocktest.New(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	leaks := make(chan wardpool.Leak[*int], 4)
	k, err := wardpool.NewKeeper(wardpool.Config[*int]{
		Limits:    pool.Limits{Size: 2},
		Dial:      func(context.Context) (*int, error) { return new(int), nil },
		Close:     func(*int) error { return nil },
		Clock:     clock,
		LeakAfter: time.Minute,
		OnLeak:    func(l wardpool.Leak[*int]) { leaks <- l },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close(context.Background())
	var loans []wardpool.Loan[*int]
	for range 3 { // the first by a dial, then through the lock and the lane
		var err error
		FromC(func() {
			var l wardpool.Loan[*int]
			l, err = acquireInCallback(k)
			loans = append(loans, l)
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(loans) < 3 {
			loans[len(loans)-1].Release()
		}
	}
	clock.Advance(2 * time.Minute)
	var l wardpool.Leak[*int]
	select {
	case l = <-leaks:
	default:
		t.Fatal("no leak reported")
	}
	s := string(l.Stack)
	if !strings.Contains(s, "acquireInCallback") || !strings.Contains(s, "leakcgoCallback") {
		t.Fatalf("the stack does not show the callback's Go frames:\n%s", s)
	}
	loans[2].Release()
}

//go:noinline
func acquireInCallback(k *wardpool.Keeper[*int]) (wardpool.Loan[*int], error) {
	return k.Acquire(context.Background())
}
