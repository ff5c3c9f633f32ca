package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"
)

func defaults() config {
	return config{seed: 1, size: 12, rate: 100, hold: 40 * time.Millisecond, dial: 20 * time.Millisecond, keep: 2 * time.Second, seconds: 24}
}

func table(t *testing.T, c config) [][]int {
	t.Helper()
	var out bytes.Buffer
	if err := run(&out, c); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if got := strings.Fields(lines[0]); strings.Join(got, " ") != "sec lent idle queued waited made retired" {
		t.Fatalf("header %q", lines[0])
	}
	var rows [][]int
	for _, l := range lines[1:] {
		var row []int
		for _, f := range strings.Fields(l) {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("row %q: %v", l, err)
			}
			row = append(row, n)
		}
		rows = append(rows, row)
	}
	return rows
}

func TestSimIsDeterministicAndHonest(t *testing.T) {
	c := defaults()
	a, b := table(t, c), table(t, c)
	if len(a) != c.seconds {
		t.Fatalf("%d rows, want one a second (%d)", len(a), c.seconds)
	}
	made, retired := 0, 0
	for i, row := range a {
		if row[0] != i+1 {
			t.Fatalf("row %d is second %d", i, row[0])
		}
		for j := range row {
			if row[j] != b[i][j] {
				t.Fatalf("same seed, different row %d: %v vs %v", i, row, b[i])
			}
		}
		lent, idle := row[1], row[2]
		if lent < 0 || idle < 0 || lent+idle > c.size {
			t.Fatalf("second %d: lent %d idle %d over size %d", row[0], lent, idle, c.size)
		}
		made += row[5]
		retired += row[6]
		// Everything made and not retired is lent, idle or being made.
		if live := made - retired; live < lent+idle || live > c.size {
			t.Fatalf("second %d: made-retired %d vs lent %d + idle %d", row[0], live, lent, idle)
		}
	}
	c.seed = 2
	if other := table(t, c); equal(other, a) {
		t.Fatal("a different seed printed the same table")
	}
}

func TestSimShrinksAfterTheBurst(t *testing.T) {
	c := defaults()
	c.keep = 500 * time.Millisecond
	rows := table(t, c)
	retiredAfter := 0
	for _, row := range rows[16:] {
		retiredAfter += row[6]
	}
	if retiredAfter == 0 {
		t.Fatal("no resource retired after the burst with a short keep")
	}
}

func TestSimRefusesBadFlags(t *testing.T) {
	c := defaults()
	c.rate = 0
	if err := run(&bytes.Buffer{}, c); err == nil {
		t.Fatal("rate 0 accepted")
	}
	c = defaults()
	c.size = -1
	if err := run(&bytes.Buffer{}, c); err == nil {
		t.Fatal("negative size accepted")
	}
}

func equal(a, b [][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}
