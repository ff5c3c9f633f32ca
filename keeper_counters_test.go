package wardpool

import (
	"context"
	"errors"
	"testing"

	"github.com/wardpool/wardpool/pool"
)

// TestAcquiresCountOnlyFinalAcquires reads the books while a borrow's Check
// is running and after it failed: an acquire is counted once its caller has
// the loan, so the counter never runs ahead and never has to fall back.
func TestAcquiresCountOnlyFinalAcquires(t *testing.T) {
	type res struct{ n int }
	n := 0
	inCheck := make(chan struct{})
	verdict := make(chan error)
	k, err := NewKeeper(Config[*res]{
		Limits:    pool.Limits{Size: 2},
		Dial:      func(context.Context) (*res, error) { n++; return &res{n}, nil },
		Close:     func(*res) error { return nil },
		CheckIdle: -1, // every borrow of an idle resource
		Check: func(context.Context, *res) error {
			inCheck <- struct{}{}
			return <-verdict
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close(context.Background())
	ctx := context.Background()

	l, err := k.Acquire(ctx) // dialed: no check
	if err != nil {
		t.Fatal(err)
	}
	l.Release()
	if got := k.Stats().Acquires; got != 1 {
		t.Fatalf("acquires after one = %d", got)
	}

	done := make(chan Loan[*res])
	go func() {
		l, err := k.Acquire(ctx)
		if err != nil {
			t.Error(err)
		}
		done <- l
	}()
	<-inCheck // the idle one is being checked
	if got := k.Stats().Acquires; got != 1 {
		// Errorf, not Fatalf: the check must still get its verdict.
		t.Errorf("acquires while the check runs = %d, want 1: not final yet", got)
	}
	verdict <- errors.New("bad connection") // dropped; a new one is dialed
	l = <-done
	s := k.Stats()
	if s.Acquires != 2 || s.CheckFailures != 1 || l.Value().n != 2 {
		t.Fatalf("after the failed check: acquires %d, check failures %d, value %d", s.Acquires, s.CheckFailures, l.Value().n)
	}
	l.Release()
}
