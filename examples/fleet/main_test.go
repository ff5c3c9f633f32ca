package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func defaults() config {
	return config{replicas: 20, budget: 40, size: 20, seconds: 20, late: 10 * time.Second, rate: 150,
		hold: 20 * time.Millisecond, patience: 500 * time.Millisecond, keep: 2 * time.Second, ttl: 3 * time.Second, borrow: true, seed: 7}
}

// TestFleetStaysWithinAndShares: every second the fleet holds no more than
// the budget; while only the first half asks, it borrows beyond its share;
// from two seconds after the second half starts asking, every replica
// holds at least half its share; and the same seed prints the same table.
func TestFleetStaysWithinAndShares(t *testing.T) {
	c := defaults()
	rows, _ := run(c)
	if len(rows) != c.seconds {
		t.Fatalf("%d rows, want %d", len(rows), c.seconds)
	}
	borrowed := false
	for _, r := range rows {
		if r.total > c.budget {
			t.Fatalf("at %v the fleet holds %d, over %d", r.at, r.total, c.budget)
		}
		for i, h := range r.held {
			if r.at < c.late && h > r.share {
				borrowed = true
			}
			if r.at >= c.late+2*time.Second && 2*h < r.share {
				t.Fatalf("at %v replica %d holds %d, under half its share %d", r.at, i, h, r.share)
			}
		}
	}
	if !borrowed {
		t.Fatal("nobody borrowed while half the fleet asked for nothing")
	}
	var a, b bytes.Buffer
	show(&a, c, rows)
	rows2, _ := run(c)
	show(&b, c, rows2)
	if a.String() != b.String() {
		t.Fatal("the same seed printed two tables")
	}
	c.seed++
	var d bytes.Buffer
	rows3, _ := run(c)
	show(&d, c, rows3)
	if d.String() == a.String() {
		t.Fatal("another seed printed the same table")
	}
}

// TestFleetNoBorrow: with borrowing off nobody holds more than its share.
func TestFleetNoBorrow(t *testing.T) {
	c := defaults()
	c.borrow, c.seconds = false, 5
	rows, _ := run(c)
	for _, r := range rows {
		for i, h := range r.held {
			if h > r.share {
				t.Fatalf("at %v replica %d holds %d over its share %d with borrowing off", r.at, i, h, r.share)
			}
		}
	}
}

func TestFleetBadSettings(t *testing.T) {
	for _, edit := range []func(*config){
		func(c *config) { c.replicas = 0 },
		func(c *config) { c.budget = -1 },
		func(c *config) { c.seconds = 0 },
		func(c *config) { c.hold = 0 },
		func(c *config) { c.ttl = time.Millisecond },
	} {
		c := defaults()
		edit(&c)
		if c.check() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if defaults().check() != nil {
		t.Fatal("the defaults refused")
	}
}

// troubled is the fleet: ten busy replicas, a budget of twenty,
// TTL 5 s, a 3 s store outage at 10 s and a failover at 25 s whose
// reconnections straddle the TTL.
func troubled() config {
	c := defaults()
	c.replicas, c.budget, c.size, c.late, c.hold, c.ttl, c.seconds = 10, 20, 10, 0, 5*time.Millisecond, 5*time.Second, 45
	c.outage, c.outageFor, c.failover = 10*time.Second, 3*time.Second, 25*time.Second
	return c
}

// TestFleetThroughOutageAndFailover: through a store outage and a failover,
// with and without churn (connections closed at one second old), the fleet
// never holds more than its budget, never drops below half of it (each
// replica keeps its safe share), is back to the whole budget before the
// run ends, and every replica decided alone while cut off.
func TestFleetThroughOutageAndFailover(t *testing.T) {
	for _, life := range []time.Duration{0, time.Second} {
		c := troubled()
		c.life = life
		_, sum := run(c)
		if sum.maxLive > c.budget || sum.over > 0 {
			t.Errorf("life %v: max live %d of %d, over the budget for %v", life, sum.maxLive, c.budget, sum.over)
		}
		if sum.fallback == 0 || len(sum.events) != 2 {
			t.Fatalf("life %v: %d fallbacks, %d events", life, sum.fallback, len(sum.events))
		}
		for _, e := range sum.events {
			if 2*e.lowest < c.budget || e.back < 0 {
				t.Errorf("life %v: %s: lowest live %d of %d, back after %v", life, e.name, e.lowest, c.budget, e.back)
			}
		}
	}
}

// TestFleetStoreBackEmpty: the store comes back from its outage empty (a
// restart without persistence); the replicas tell it what they hold, and
// with churn the fleet neither goes over nor drains while it relearns.
func TestFleetStoreBackEmpty(t *testing.T) {
	c := troubled()
	c.failover, c.seconds, c.life, c.restart = 0, 25, time.Second, true
	_, sum := run(c)
	if e := sum.events[0]; sum.maxLive > c.budget || sum.over > 0 || 2*e.lowest < c.budget || e.back < 0 || e.gaveUp > 0 {
		t.Errorf("max live %d of %d, over for %v; %s: lowest %d, back after %v, %d gave up",
			sum.maxLive, c.budget, sum.over, e.name, e.lowest, e.back, e.gaveUp)
	}
}

// TestFleetLogsOutages: each replica writes one line when the store goes
// away and one when it is back, per outage, stamped with the virtual time.
func TestFleetLogsOutages(t *testing.T) {
	c := troubled()
	c.seconds = 20
	var logs bytes.Buffer
	c.logs = &logs
	run(c)
	out := logs.String()
	if n := strings.Count(out, "unreachable"); n != c.replicas {
		t.Errorf("%d lines say the store is unreachable, want %d (one per replica):\n%s", n, c.replicas, out)
	}
	if n := strings.Count(out, "reachable again"); n != c.replicas {
		t.Errorf("%d lines say the store is back, want %d", n, c.replicas)
	}
	if !strings.Contains(out, "t=10s ") || !strings.Contains(out, "after=3s") {
		t.Errorf("the lines do not carry the virtual time:\n%s", out)
	}
}

// TestFleetPartition: one replica cut off alone for three TTLs. Two TTLs
// in, the store drops its slots and the others may take them: the fleet is
// over its budget by at most what that replica holds, from then until it
// is heard again and the borrowers give back (about a second), and never
// drains, with churn, through the rebuild that follows.
func TestFleetPartition(t *testing.T) {
	for _, life := range []time.Duration{0, time.Second} {
		c := troubled()
		c.outage, c.failover, c.seconds, c.life = 0, 0, 40, life
		c.partition, c.partitionFor = 10*time.Second, 3*c.ttl
		_, sum := run(c)
		share := c.budget / c.replicas
		if sum.maxLive > c.budget+share || sum.over > c.partitionFor-2*c.ttl+time.Second {
			t.Errorf("life %v: max live %d of %d, over for %v", life, sum.maxLive, c.budget, sum.over)
		}
		if e := sum.events[0]; 2*e.lowest < c.budget || e.back < 0 || e.gaveUp > 0 {
			t.Errorf("life %v: %s: lowest live %d, back after %v, %d gave up", life, e.name, e.lowest, e.back, e.gaveUp)
		}
	}
}
