package pool

import (
	"math"
	"testing"
	"time"

	"github.com/wardpool/wardpool/ward"
)

func warded(t *testing.T, l Limits, w ward.Ward) *Pool[*conn] {
	t.Helper()
	p, err := New[*conn](l, w)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBreakerShedsMakesToAFailingBackend(t *testing.T) {
	p := warded(t, Limits{Size: 100}, ward.Ward{Breaker: ward.NewBreaker(ward.DefaultSre, at(0))})
	// Every make fails. The breaker lets the first few through (protection),
	// then refuses a growing share; a roll of 0 is refused as soon as the
	// drop fraction is above zero.
	shedAt := -1
	for i := 0; i < 50 && shedAt < 0; i++ {
		now := at(i * 10)
		switch tk := p.Take(now, 0, 0); tk.Kind {
		case Make:
			p.Unmade(now, 0.5, ward.GuardNone)
		case Shed:
			if tk.Guard != ward.GuardBreaker {
				t.Fatalf("shed by %v, want the breaker", tk.Guard)
			}
			shedAt = i
		default:
			t.Fatalf("take %d = %v", i, tk.Kind)
		}
	}
	if shedAt < 5 {
		t.Fatalf("breaker shed at take %d: protection lets at least 5 through", shedAt)
	}
	if r := p.Refusal(at(shedAt * 10)); r <= 0 || r > 1 {
		t.Fatalf("refusal %v after a run of failures", r)
	}
	b := p.Books()
	if b.Shed != 1 || b.Failed != uint64(shedAt) || b.Live != 0 {
		t.Fatalf("books %+v", b)
	}
	// Lending an idle resource is not the breaker's business: a pool that
	// holds one still lends it while the breaker refuses makes.
	now := at(shedAt * 10)
	c := &conn{1}
	if !p.Made(c, p.Gen(), now, 0) || !p.Give(c, now) {
		t.Fatal("could not seat a resource")
	}
	if tk := p.Take(now, 0, 0); tk.Kind != Ready {
		t.Fatalf("take with an idle one = %v", tk.Kind)
	}
}

func TestBreakerRecoversWhenMakesSucceed(t *testing.T) {
	p := warded(t, Limits{}, ward.Ward{Breaker: ward.NewBreaker(ward.DefaultSre, at(0))})
	for i := range 40 {
		if tk := p.Take(at(i), 0.99, 0); tk.Kind == Make {
			p.Unmade(at(i), 0.5, ward.GuardNone)
		}
	}
	if p.Refusal(at(40)) == 0 {
		t.Fatal("no refusal after 40 failures")
	}
	// Ten seconds later the window has forgotten the outage.
	if r := p.Refusal(at(40 + 10_001)); r != 0 {
		t.Fatalf("refusal %v after the window passed", r)
	}
}

func TestBackoffHoldsMakesAfterAFailure(t *testing.T) {
	b := ward.DefaultBackoff
	p := warded(t, Limits{Size: 5}, ward.Ward{Backoff: &b})
	if tk := p.Take(at(0), 0, 0); tk.Kind != Make {
		t.Fatalf("first take %v", tk.Kind)
	}
	p.Unmade(at(0), 0.5, ward.GuardNone) // draw 0.5 under Spread(0.2): exactly the ceiling, 100 ms
	tk := p.Take(at(10), 0, 0)
	if tk.Kind != Later || tk.Guard != ward.GuardBackoff || tk.Delay != 90*time.Millisecond {
		t.Fatalf("take during backoff = %+v, want Later 90ms by backoff", tk)
	}
	if tk := p.Take(at(100), 0, 0); tk.Kind != Make {
		t.Fatalf("take when backoff ends = %v", tk.Kind)
	}
	p.Unmade(at(100), 0.5, ward.GuardNone) // second failure in a row: 200 ms
	if tk := p.Take(at(299), 0, 0); tk.Kind != Later || tk.Delay != time.Millisecond {
		t.Fatalf("take at 299ms = %+v, want Later 1ms", tk)
	}
	if tk := p.Take(at(300), 0, 0); tk.Kind != Make {
		t.Fatalf("take at 300ms = %v", tk.Kind)
	}
	p.Made(&conn{1}, p.Gen(), at(300), 0) // a success resets the run
	if tk := p.Take(at(300), 0, 0); tk.Kind != Make {
		t.Fatalf("take after a success = %v", tk.Kind)
	}
	p.Unmade(at(300), 0.5, ward.GuardNone) // the first failure of a new run: 100 ms again, not 400
	if tk := p.Take(at(300), 0, 0); tk.Kind != Later || tk.Delay != 100*time.Millisecond {
		t.Fatalf("take after a new failure = %+v, want Later 100ms", tk)
	}
	if b := p.Books(); b.Deferred != 3 || b.Failed != 3 {
		t.Fatalf("books %+v", b)
	}
}

func TestBucketSpacesMakesNotLoans(t *testing.T) {
	p := warded(t, Limits{}, ward.Ward{Bucket: ward.NewBucket(10, 1, at(0))})
	c := &conn{1}
	if tk := p.Take(at(0), 0, 0); tk.Kind != Make {
		t.Fatalf("first take %v", tk.Kind)
	}
	p.Made(c, p.Gen(), at(0), 0)
	tk := p.Take(at(0), 0, 0)
	if tk.Kind != Later || tk.Guard != ward.GuardBucket || tk.Delay != 100*time.Millisecond {
		t.Fatalf("second make at once = %+v, want Later 100ms by bucket", tk)
	}
	p.Give(c, at(1))
	if tk := p.Take(at(1), 0, 0); tk.Kind != Ready {
		t.Fatalf("lending an idle one = %v: the bucket spaces makes only", tk.Kind)
	}
	if tk := p.Take(at(100), 0, 0); tk.Kind != Make {
		t.Fatalf("take after the token came = %v", tk.Kind)
	}
}

func TestLimiterWaitsWhenLeasesAreOut(t *testing.T) {
	a := ward.DefaultAimd
	a.Initial, a.Min, a.Max = 2, 1, 2
	lim := ward.NewLimiter(a)
	p := warded(t, Limits{Size: 10}, ward.Ward{Limiter: lim})
	c1, c2 := &conn{1}, &conn{2}
	p.Take(at(0), 0, 0)
	p.Made(c1, p.Gen(), at(0), 0)
	p.Take(at(0), 0, 0)
	p.Made(c2, p.Gen(), at(0), 0)
	tk := p.Take(at(1), 0, 0)
	if tk.Kind != Wait || tk.Guard != ward.GuardLimiter {
		t.Fatalf("third take = %+v, want Wait by limiter", tk)
	}
	if lim.Inflight() != 2 {
		t.Fatalf("inflight %d", lim.Inflight())
	}
	p.Give(c1, at(2))
	if lim.Inflight() != 1 {
		t.Fatalf("inflight after give %d", lim.Inflight())
	}
	if tk := p.Take(at(3), 0, 0); tk.Kind != Ready {
		t.Fatalf("take after a lease came back = %v", tk.Kind)
	}
	// A failed make gives its lease back without a sample.
	p.Drop(c2, at(4))
	p.Take(at(5), 0, 0)
	p.Unmade(at(5), 0, ward.GuardNone)
	if lim.Inflight() != 1 || lim.Limit() != 1 {
		// Drop is a failure signal (2 × 0.9 → 1); Unmade changes nothing.
		t.Fatalf("inflight %d limit %d", lim.Inflight(), lim.Limit())
	}
}

func TestShedderRefusesLendingWhileHotAndFull(t *testing.T) {
	sh := ward.NewShedder(ward.DefaultShed, at(0))
	p := warded(t, Limits{}, ward.Ward{Shedder: sh})
	// Cool CPU: any number in flight is fine.
	for i := range 30 {
		if tk := p.Take(at(0), 0, 100); tk.Kind != Make {
			t.Fatalf("take %d on a cool host = %v", i, tk.Kind)
		}
		p.Made(&conn{i}, p.Gen(), at(0), 0)
	}
	// At full CPU with thirty in flight, the host is hot and full.
	tk := p.Take(at(1), 0, 1000)
	if tk.Kind != Shed || tk.Guard != ward.GuardShedder {
		t.Fatalf("take on a hot, full host = %+v", tk)
	}
	if sh.Flying() != 30 {
		t.Fatalf("flying %d: a refused take must hold nothing", sh.Flying())
	}
}

func TestRefusedTakesHoldNothing(t *testing.T) {
	// The bucket refuses after the limiter and shedder said yes: both must
	// be given back.
	a := ward.DefaultAimd
	lim := ward.NewLimiter(a)
	sh := ward.NewShedder(ward.DefaultShed, at(0))
	p := warded(t, Limits{}, ward.Ward{Limiter: lim, Shedder: sh, Bucket: ward.NewBucket(1, 1, at(0))})
	p.Take(at(0), 0, 0)
	p.Unmade(at(0), 0, ward.GuardNone)
	for i := range 5 {
		if tk := p.Take(at(1), 0, 0); tk.Kind != Later {
			t.Fatalf("take %d = %v, want Later", i, tk.Kind)
		}
	}
	if lim.Inflight() != 0 || sh.Flying() != 0 {
		t.Fatalf("after refusals: limiter %d in flight, shedder %d", lim.Inflight(), sh.Flying())
	}
}

func TestEmptyWardIsNoWard(t *testing.T) {
	if !(ward.Ward{}).IsZero() {
		t.Fatal("zero Ward is not IsZero")
	}
	p := warded(t, Limits{Size: 1}, ward.Ward{})
	if r := p.Refusal(at(0)); r != 0 {
		t.Fatalf("refusal without a breaker = %v", r)
	}
}

func TestMadeWithoutReservationHoldsALease(t *testing.T) {
	a := ward.DefaultAimd
	a.Initial, a.Min, a.Max = 1, 1, 1
	lim := ward.NewLimiter(a)
	p := warded(t, Limits{}, ward.Ward{Limiter: lim})
	if !p.Made(&conn{1}, p.Gen(), at(0), 0) {
		t.Fatal("unasked-for resource refused with a lease free")
	}
	if lim.Inflight() != 1 {
		t.Fatalf("inflight %d, want the loan's lease", lim.Inflight())
	}
	if p.Made(&conn{2}, p.Gen(), at(0), 0) {
		t.Fatal("second unasked-for resource taken on with no lease left")
	}
	if b := p.Books(); b.Waited != 0 || b.Made != 1 || b.Live != 1 {
		t.Fatalf("books %+v: a refused Made counts nothing", b)
	}
	if tk := p.Take(at(0), 0, 0); tk.Kind != Wait {
		t.Fatalf("take with the only lease out = %v", tk.Kind)
	}
}

func TestBadDrawsAndCPUReadingsAreClamped(t *testing.T) {
	b := ward.DefaultBackoff
	p := warded(t, Limits{Size: 4}, ward.Ward{
		Breaker: ward.NewBreaker(ward.DefaultSre, at(0)),
		Shedder: ward.NewShedder(ward.DefaultShed, at(0)),
		Limiter: ward.NewLimiter(ward.DefaultAimd),
		Bucket:  ward.NewBucket(1000, 10, at(0)),
		Backoff: &b,
	})
	rolls := []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 2, 0.999999}
	cpus := []int{-5, 0, 1000, 5000, math.MaxInt, math.MinInt}
	for i := range 200 {
		now := at(i)
		tk := p.Take(now, rolls[i%len(rolls)], cpus[i%len(cpus)])
		switch tk.Kind {
		case Make:
			if i%3 == 0 {
				p.Unmade(now, rolls[(i+1)%len(rolls)], ward.GuardNone)
			} else {
				p.Made(&conn{i}, p.Gen(), now, 0)
			}
		case Ready:
			p.Give(tk.Item, now)
		case Later:
			if tk.Delay < 0 {
				t.Fatalf("take %d: negative delay %v", i, tk.Delay)
			}
		}
		checkBooks(t, p)
		if r := p.Refusal(now); !(r >= 0 && r <= 1) {
			t.Fatalf("refusal %v", r)
		}
	}
}
