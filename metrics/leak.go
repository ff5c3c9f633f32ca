package metrics

import (
	"context"
	"log/slog"

	"github.com/wardpool/wardpool"
)

// The messages of the leak reports, for filtering logs. They are the
// messages of the Keeper's own report (Config.OnLeak nil) and of every
// driver's, and all of them log at warning level, so that one filter on
// msg finds every leak report of every wardpool pool.
const (
	// LeakMessage is logged when a loan has been held longer than
	// Config.LeakAfter.
	LeakMessage = "wardpool: a loan is held longer than LeakAfter"
	// LeakReturnedMessage is logged when a loan reported as a leak comes
	// back after all.
	LeakReturnedMessage = "wardpool: a loan reported as held too long came back"
)

// LeakLevel is the level of both leak reports, everywhere.
const LeakLevel = slog.LevelWarn

// LeakLog is a leak report handler for wardpool.Config.OnLeak that logs with
// log/slog. The zero LeakLog logs on slog.Default() and leaves the item out.
//
// A report of a loan still out is logged at LeakLevel (warning) with the
// message LeakMessage and the attributes
//
//	held   how long the loan has been out (a time.Duration)
//	stack  the call stack of the Acquire that took it
//
// and a report of such a loan coming back at the same level with the
// message LeakReturnedMessage and the same attributes, held then being the
// whole loan's length. Both carry any attributes of Attrs after those.
// Message, level and the held and stack attributes are those of the
// Keeper's own report and of the drivers'.
//
// OnLeak[C] fits the Config.OnLeak of wardpool.Config[C] and of every driver,
// whose Leak is wardpool.Leak of its connection type:
//
//	pgxCfg.OnLeak = metrics.OnLeak[*pgx.Conn](logger)       // a *pgxward.Config
//	sqlCfg.OnLeak = metrics.OnLeak[driver.Conn](logger)     // a sqlward.Config
//	redisCfg.OnLeak = metrics.OnLeak[*redis.Client](logger) // a redisward.Config
type LeakLog[T comparable] struct {
	// Logger is where reports go; nil means slog.Default() at the time of
	// each report.
	Logger *slog.Logger
	// Item, when set, describes the leaked resource as the item attribute
	// (for example its backend process id). Unset, the item is not logged:
	// printing a connection may print its secrets.
	Item func(T) slog.Value
	// Attrs are added to every report, e.g. slog.String("pool", "orders").
	Attrs []slog.Attr
}

// OnLeak returns a handler for wardpool.Config.OnLeak that logs each report on
// logger (nil: slog.Default()) as LeakLog does.
func OnLeak[T comparable](logger *slog.Logger) func(wardpool.Leak[T]) {
	return LeakLog[T]{Logger: logger}.Handler()
}

// Handler returns the function to set as wardpool.Config.OnLeak. It is safe for
// concurrent use if the Logger's handler is.
func (c LeakLog[T]) Handler() func(wardpool.Leak[T]) {
	attrs := append([]slog.Attr(nil), c.Attrs...)
	return func(l wardpool.Leak[T]) { c.report(l, attrs) }
}

// report logs one leak report.
func (c LeakLog[T]) report(l wardpool.Leak[T], extra []slog.Attr) {
	log := c.Logger
	if log == nil {
		log = slog.Default()
	}
	level, msg := LeakLevel, LeakMessage
	if l.Returned {
		msg = LeakReturnedMessage
	}
	ctx := context.Background()
	if !log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 3+len(extra))
	attrs = append(attrs, slog.Duration("held", l.Held), slog.String("stack", string(l.Stack)))
	if c.Item != nil {
		attrs = append(attrs, slog.Any("item", c.Item(l.Item)))
	}
	attrs = append(attrs, extra...)
	log.LogAttrs(ctx, level, msg, attrs...)
}
