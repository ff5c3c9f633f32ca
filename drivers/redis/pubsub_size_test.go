package redisward

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestSubscriptionsDoNotStarveCommands: with Size 4 and four Pub/Sub
// subscriptions open through Client(), a GET still gets its answer at once,
// as on go-redis, whose PubSub connections are outside its PoolSize. The
// subscriptions' connections are in the books (Live, Busy), not against
// the Size; a message published reaches a subscriber; closing them gives
// the connections back (destroyed: they were subscribed).
func TestSubscriptionsDoNotStarveCommands(t *testing.T) {
	p, _ := newPool(t, 4, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rdb := p.Client()
	var subs []*redis.PubSub
	for i := range 4 {
		ps := rdb.Subscribe(ctx, "wardpool-starve-"+string(rune('a'+i)))
		if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
			t.Fatal(err)
		}
		subs = append(subs, ps)
	}
	s := p.WardStats()
	if s.Busy < 4 || s.Live < 4 {
		t.Errorf("four subscriptions open: busy %d, live %d; want them in the books", s.Busy, s.Live)
	}
	if err := rdb.Set(ctx, "wardpool-starve", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	short, cancel2 := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel2()
	if v, err := rdb.Get(short, "wardpool-starve").Result(); err != nil || v != "v" {
		t.Fatalf("GET with Size 4 and four subscriptions open = %q, %v; want the answer", v, err)
	}
	// Four commands at once, each on a connection of its own: the whole
	// Size is still the commands'.
	var loans []Loan
	for range 4 {
		l, err := p.Acquire(short)
		if err != nil {
			t.Fatalf("acquire %d of Size 4 beside four subscriptions: %v", len(loans)+1, err)
		}
		loans = append(loans, l)
	}
	for _, l := range loans {
		l.Release()
	}
	if err := rdb.Publish(ctx, "wardpool-starve-a", "hello").Err(); err != nil {
		t.Fatal(err)
	}
	if m, err := subs[0].ReceiveMessage(ctx); err != nil || m.Payload != "hello" {
		t.Fatalf("the subscriber got %v, %v", m, err)
	}
	for _, ps := range subs {
		if err := ps.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if s := p.WardStats(); s.Busy != 0 {
		t.Errorf("after the subscriptions closed: busy %d, want 0", s.Busy)
	}
}
