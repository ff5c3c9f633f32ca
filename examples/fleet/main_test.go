package main

import (
	"bytes"
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
