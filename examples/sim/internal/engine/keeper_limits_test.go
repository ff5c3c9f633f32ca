package engine

import (
	"context"
	"testing"
	"time"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/pool/record"
)

// A Keeper resized while it records (Keeper.SetLimits): the idle resources
// the new limits retire free their seats, and the loans after it, on seats
// used again, are read exactly.
func TestKeeperRecordingWithSetLimits(t *testing.T) {
	base := time.Date(2026, 11, 30, 14, 2, 0, 0, time.UTC)
	clock := clocktest.New(base)
	n := 0
	k, err := wardpool.NewKeeper(wardpool.Config[*int]{
		Limits:   pool.Limits{Size: 3, Idle: 3, Keep: time.Minute},
		Dial:     func(context.Context) (*int, error) { n++; v := n; return &v, nil },
		Close:    func(*int) error { return nil },
		Clock:    clock,
		Recorder: record.New(1 << 20),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	step := func() { clock.Advance(time.Millisecond) }
	var ls []wardpool.Loan[*int]
	for range 3 {
		l, err := k.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		step()
	}
	for _, l := range ls {
		l.Release()
		step()
	}
	if err := k.SetLimits(pool.Limits{Size: 1, Idle: 1, Keep: time.Minute}); err != nil {
		t.Fatal(err)
	}
	step()
	if err := k.SetLimits(pool.Limits{Size: 3, Idle: 3, Keep: time.Minute}); err != nil {
		t.Fatal(err)
	}
	for range 6 { // seats freed by SetLimits are dialed into again
		step()
		a, err := k.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, err := k.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		step()
		a.Release()
		b.Release()
	}
	data := k.Recording()
	if err := k.Close(ctx); err != nil {
		t.Fatal(err)
	}
	kl, err := ReadKeeper(data)
	if err != nil {
		t.Fatal(err)
	}
	c := kl.Counts
	if c.Lock+c.Dialed != 15 || c.Guessed+c.Open+c.Before+c.Failed+c.GaveUp+c.Waiting != 0 {
		t.Fatalf("15 loans read as: %v", c)
	}
}
