package shared

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// outages is a Store whose calls fail with a timeout while down says so.
type outages struct {
	Store
	down func() bool
}

func (s outages) Incr(ctx context.Context, key string, ttl time.Duration) (int64, error) {
	if s.down() {
		return 0, context.DeadlineExceeded
	}
	return s.Store.Incr(ctx, key, ttl)
}

func (s outages) IncrUnder(ctx context.Context, key, prev string, w float64, limit int64, ttl time.Duration) (int64, bool, error) {
	if s.down() {
		return 0, false, context.DeadlineExceeded
	}
	return s.Store.IncrUnder(ctx, key, prev, w, limit, ttl)
}

func (s outages) SetIfAbsent(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if s.down() {
		return false, errors.New("connection reset by peer")
	}
	return s.Store.SetIfAbsent(ctx, key, value, ttl)
}

func (s outages) Get(ctx context.Context, key string) (string, bool, error) {
	if s.down() {
		return "", false, context.DeadlineExceeded
	}
	return s.Store.Get(ctx, key)
}

func (s outages) Budget(ctx context.Context, op BudgetOp) (BudgetReply, error) {
	if s.down() {
		return BudgetReply{}, context.DeadlineExceeded
	}
	return s.Store.Budget(ctx, op)
}

// driveShared makes a fixed run of calls into a breaker, a counter, a
// period and a budget over store, at instants from t0 on (setting *now
// before each, for a store whose clock reads it), and returns every answer
// and the guards' stats at the end, rendered.
func driveShared(store Store, now *time.Time) []string {
	ctx := context.Background()
	link := Link{Store: store, Timeout: time.Second}
	pol := DefaultBreaker
	pol.Failures, pol.Cooldown, pol.Lease = 3, 300*time.Millisecond, 200*time.Millisecond
	br := NewBreaker(link, "db", pol)
	ctr := NewCounter(link, "dials", 4, time.Second, 2)
	per := NewPeriod(link, "quota", 5, time.Second, 3)
	bud := NewBudget(link, "pool", "me", BudgetConfig{Slots: 3, TTL: time.Second, Borrow: true})
	other := NewBudget(link, "pool", "other", BudgetConfig{Slots: 3, TTL: time.Second, Borrow: true})
	var out []string
	say := func(f string, args ...any) { out = append(out, fmt.Sprintf(f, args...)) }
	for i := range 400 {
		*now = t0.Add(time.Duration(i) * 37 * time.Millisecond)
		switch i % 7 {
		case 0, 1:
			call, ok, err := br.Allow(ctx, *now)
			say("allow %v %v %v", ok, err, br.Seen())
			if ok {
				if i%3 == 0 {
					say("fail %v", call.Fail(ctx, *now))
				} else {
					say("pass %v", call.Pass(ctx))
				}
			}
		case 2:
			ok, err := ctr.Take(ctx, *now)
			say("counter %v %v", ok, err)
		case 3:
			q, err := per.Take(ctx, *now)
			say("period %v %v", q, err)
		case 4:
			ok, err := bud.Lease(ctx)
			say("lease %v %v held %d owed %d", ok, err, bud.Held(), bud.Owed())
			ok, err = other.Lease(ctx)
			say("other %v %v", ok, err)
		case 5:
			if bud.Held() > 0 && i%2 == 0 {
				say("return %v", bud.Return(ctx))
			}
		case 6:
			say("renew %v owed %d", bud.Renew(ctx), bud.Owed())
		}
	}
	say("leave %v", bud.Leave(ctx))
	say("stats %+v %+v %+v %+v", br.Stats(), ctr.Stats(), per.Stats(), bud.Stats())
	return out
}

// TestTapeReplaysTheSharedGuardsAlone: a breaker, a counter, a period and
// a budget run over a store that goes down now and then, through a Tape;
// the same calls over the Reel alone, no store behind it, give every
// answer, every error and every local fallback the same, and use every
// recorded reply.
func TestTapeReplaysTheSharedGuardsAlone(t *testing.T) {
	var now time.Time
	n := 0
	mem := NewMemStore(func() time.Time { return now })
	tape := NewTape(outages{Store: mem, down: func() bool { n++; return n%50 >= 44 }}, 0)
	want := driveShared(tape, &now)
	data := tape.Bytes()
	reel, err := ReadTape(data)
	if err != nil {
		t.Fatal(err)
	}
	got := driveShared(reel, &now)
	if len(got) != len(want) {
		t.Fatalf("%d answers replayed, %d recorded", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("answer %d: recorded %q, replayed %q", i, want[i], got[i])
		}
	}
	if reel.Err() != nil || reel.Left() != 0 || tape.Full() {
		t.Fatalf("err %v, %d of %d recorded calls unused, full %v", reel.Err(), reel.Left(), reel.Calls(), tape.Full())
	}
	fallbacks := 0
	for _, s := range want {
		if strings.HasPrefix(s, "allow ") && strings.Contains(s, "deadline") {
			fallbacks++
		}
	}
	if fallbacks == 0 {
		t.Fatal("the store never timed out under the breaker: the outages went untested")
	}
	t.Logf("%d calls on a tape of %d bytes; %d answers", reel.Calls(), len(data), len(want))
}

// TestReelRefusesWhatItDoesNotHold: a call the tape does not hold fails
// with ErrTape, which a guard takes as an outage, and Err names it.
func TestReelRefusesWhatItDoesNotHold(t *testing.T) {
	reel, err := ReadTape(NewTape(NewMemStore(nil), 0).Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := reel.Get(context.Background(), "{db}:open"); !errors.Is(err, ErrTape) {
		t.Fatalf("Get on an empty tape: %v", err)
	}
	if !errors.Is(reel.Err(), ErrTape) {
		t.Fatalf("Err: %v", reel.Err())
	}
}

// TestTapeCorrupted cuts a tape at every length and flips every 13th byte
// of it, the checksum mended: each is refused with ErrTape or reads, and none
// panics.
func TestTapeCorrupted(t *testing.T) {
	var now time.Time
	tape := NewTape(NewMemStore(func() time.Time { return now }), 0)
	driveShared(tape, &now)
	data := tape.Bytes()
	for n := range len(data) {
		if _, err := ReadTape(data[:n]); !errors.Is(err, ErrTape) {
			t.Fatalf("cut at %d of %d: %v", n, len(data), err)
		}
	}
	for i := 0; i < len(data)-8; i += 13 {
		bad := append([]byte(nil), data...)
		bad[i] ^= 0x5a
		mendTape(bad)
		if reel, err := ReadTape(bad); err == nil {
			driveShared(reel, &now) // answers may differ; nothing panics
		} else if !errors.Is(err, ErrTape) {
			t.Fatalf("byte %d flipped: %v", i, err)
		}
	}
}

func mendTape(b []byte) {
	body := b[:len(b)-8]
	sum := fnv64(body)
	for j := range 8 {
		b[len(body)+j] = byte(sum >> (8 * (7 - j)))
	}
}

func FuzzReadTape(f *testing.F) {
	var now time.Time
	tape := NewTape(NewMemStore(func() time.Time { return now }), 0)
	driveShared(tape, &now)
	f.Add(tape.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 8 {
			mendTape(b)
		}
		reel, err := ReadTape(b)
		if err != nil {
			if !errors.Is(err, ErrTape) {
				t.Fatal(err)
			}
			return
		}
		driveShared(reel, &now)
	})
}
