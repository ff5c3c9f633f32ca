package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardpool/wardpool"
	"github.com/wardpool/wardpool/internal/clocktest"
	"github.com/wardpool/wardpool/pool"
)

// logBuffer is a JSON slog logger writing to a buffer, safe for concurrent
// use, whose records can be read back.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(b, &slog.HandlerOptions{Level: level}))
}

// records decodes every record logged so far.
func (b *logBuffer) records(t *testing.T) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	dec := json.NewDecoder(bytes.NewReader(b.buf.Bytes()))
	for dec.More() {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// check compares the fields of rec named in want; a nil want value means
// the field must be absent.
func check(t *testing.T, rec map[string]any, want map[string]any) {
	t.Helper()
	for k, w := range want {
		g, ok := rec[k]
		switch {
		case w == nil && ok:
			t.Errorf("%s = %v, want no such field", k, g)
		case w != nil && !ok:
			t.Errorf("no field %s (want %v) in %v", k, w, rec)
		case w != nil && g != w:
			t.Errorf("%s = %v (%T), want %v (%T)", k, g, g, w, w)
		}
	}
}

func TestLeakLogReports(t *testing.T) {
	var b logBuffer
	h := OnLeak[*conn](b.logger(slog.LevelInfo))
	stack := "main.handler\n\tapp/main.go:42\n"
	h(wardpool.Leak[*conn]{Item: &conn{id: 7}, Held: 90 * time.Second, Stack: []byte(stack)})
	h(wardpool.Leak[*conn]{Item: &conn{id: 7}, Held: 95 * time.Second, Stack: []byte(stack), Returned: true})
	recs := b.records(t)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2: %v", len(recs), recs)
	}
	// JSONHandler writes a Duration as nanoseconds.
	check(t, recs[0], map[string]any{
		"level": "WARN", "msg": LeakMessage,
		"held": float64(90 * time.Second), "stack": stack, "item": nil,
	})
	check(t, recs[1], map[string]any{
		"level": "WARN", "msg": LeakReturnedMessage,
		"held": float64(95 * time.Second), "stack": stack, "item": nil,
	})
}

func TestLeakLogItemAndAttrs(t *testing.T) {
	var b logBuffer
	h := LeakLog[*conn]{
		Logger: b.logger(slog.LevelInfo),
		Item:   func(c *conn) slog.Value { return slog.IntValue(c.id) },
		Attrs:  []slog.Attr{slog.String("pool", "orders")},
	}.Handler()
	h(wardpool.Leak[*conn]{Item: &conn{id: 7}, Held: time.Second})
	recs := b.records(t)
	if len(recs) != 1 {
		t.Fatalf("%d records, want 1", len(recs))
	}
	check(t, recs[0], map[string]any{"item": float64(7), "pool": "orders", "stack": "", "held": float64(time.Second)})
}

func TestLeakLogAttrsAreCopied(t *testing.T) {
	var b logBuffer
	attrs := []slog.Attr{slog.String("pool", "orders")}
	h := LeakLog[*conn]{Logger: b.logger(slog.LevelInfo), Attrs: attrs}.Handler()
	attrs[0] = slog.String("pool", "changed")
	h(wardpool.Leak[*conn]{})
	check(t, b.records(t)[0], map[string]any{"pool": "orders"})
}

func TestLeakLogLevels(t *testing.T) {
	// Both reports are at LeakLevel: a logger at warning level keeps both,
	// one at error level drops both, and Item is not asked about a record
	// that is not logged.
	for _, c := range []struct {
		level slog.Level
		want  int
	}{{slog.LevelWarn, 2}, {slog.LevelError, 0}} {
		var b logBuffer
		asked := 0
		h := LeakLog[*conn]{
			Logger: b.logger(c.level),
			Item:   func(c *conn) slog.Value { asked++; return slog.IntValue(c.id) },
		}.Handler()
		h(wardpool.Leak[*conn]{Item: &conn{id: 1}, Held: time.Minute})
		h(wardpool.Leak[*conn]{Item: &conn{id: 1}, Held: time.Hour, Returned: true})
		recs := b.records(t)
		if len(recs) != c.want || asked != c.want {
			t.Fatalf("logger at %v: records %v, Item asked %d times; want %d", c.level, recs, asked, c.want)
		}
		for _, r := range recs {
			if r["level"] != "WARN" {
				t.Errorf("record at %v, want WARN: %v", r["level"], r)
			}
		}
	}
}

// TestLeakLogMatchesKeeper holds LeakLog to the Keeper's own report (no
// OnLeak): the same messages, level and attributes, so that one log filter
// finds both.
func TestLeakLogMatchesKeeper(t *testing.T) {
	var b logBuffer
	clk := clocktest.New(clockStart)
	k, err := wardpool.NewKeeper(wardpool.Config[*conn]{
		Limits:    pool.Limits{Size: 1},
		Dial:      func(context.Context) (*conn, error) { return &conn{}, nil },
		Close:     func(*conn) error { return nil },
		Clock:     clk,
		LeakAfter: time.Second,
		Logger:    b.logger(slog.LevelInfo),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = k.Close(context.Background()) }()
	l, err := acquireHere(k)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(1500 * time.Millisecond)
	l.Release()
	recs := b.records(t)
	if len(recs) != 2 {
		t.Fatalf("the Keeper logged %d records, want 2: %v", len(recs), recs)
	}
	for i, msg := range []string{LeakMessage, LeakReturnedMessage} {
		check(t, recs[i], map[string]any{"level": LeakLevel.String(), "msg": msg})
		for _, key := range []string{"held", "stack"} {
			if _, ok := recs[i][key]; !ok {
				t.Errorf("the Keeper's record %d has no %s: %v", i, key, recs[i])
			}
		}
	}
}

func TestLeakLogDefaultLogger(t *testing.T) {
	var b logBuffer
	old := slog.Default()
	slog.SetDefault(b.logger(slog.LevelInfo))
	defer slog.SetDefault(old)
	OnLeak[int](nil)(wardpool.Leak[int]{Held: time.Second})
	recs := b.records(t)
	if len(recs) != 1 || recs[0]["msg"] != LeakMessage {
		t.Fatalf("records %v, want one leak on the default logger", recs)
	}
}

// TestLeakLogKeeper runs the handler as a Keeper's OnLeak: a loan held past
// LeakAfter is logged with the stack of the Acquire that took it, and again
// when it comes back, and the Collector counts the leak.
func TestLeakLogKeeper(t *testing.T) {
	var b logBuffer
	clk := clocktest.New(clockStart)
	k := newKeeper(t, clk, pool.Limits{Size: 2}, time.Second, OnLeak[*conn](b.logger(slog.LevelInfo)))
	l, err := acquireHere(k)
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(1500 * time.Millisecond)
	recs := b.records(t)
	if len(recs) != 1 {
		t.Fatalf("after the leak: %d records, want 1: %v", len(recs), recs)
	}
	check(t, recs[0], map[string]any{"level": "WARN", "msg": LeakMessage, "held": float64(time.Second)}) // reported when the timer fired
	if s, _ := recs[0]["stack"].(string); !strings.Contains(s, "acquireHere") {
		t.Errorf("the stack does not name the function that acquired:\n%s", s)
	}
	if got := k.Stats().Leaks; got != 1 {
		t.Errorf("Stats.Leaks = %d, want 1", got)
	}

	clk.Advance(500 * time.Millisecond)
	l.Release()
	recs = b.records(t)
	if len(recs) != 2 {
		t.Fatalf("after the return: %d records, want 2: %v", len(recs), recs)
	}
	check(t, recs[1], map[string]any{"level": "WARN", "msg": LeakReturnedMessage, "held": float64(2 * time.Second)})
	if s, _ := recs[1]["stack"].(string); !strings.Contains(s, "acquireHere") {
		t.Errorf("the return's stack does not name the function that acquired:\n%s", s)
	}
}

// acquireHere acquires from k; its name is looked for in the leak's stack.
//
//go:noinline
func acquireHere(k *wardpool.Keeper[*conn]) (wardpool.Loan[*conn], error) {
	return k.Acquire(context.Background())
}
