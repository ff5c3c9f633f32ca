// Package ward holds the guards that stand in front of a backend: a
// probabilistic circuit breaker ([Breaker]), a load shedder ([Shedder]), rate
// and quota limits ([Bucket], [Sliding], [Counter], [Period]), a concurrency
// ceiling ([Gate]), a time budget ([Deadline]), retry spacing ([Backoff]) and
// an adaptive concurrency limit ([Limiter]). [Ward] groups the optional ones
// in front of one pool.
//
// The guards that keep their state where every replica of a service sees it
// (a shared breaker, rate, quota and connection budget) do I/O, so they live
// apart, in package ward/shared.
//
// Nothing in this package reads a clock, draws a random number, starts a
// goroutine or touches the network; purity_test.go holds it to that. Every
// method that depends on time takes the caller's reading as now; spans are
// time.Duration; every random decision takes a draw in [0, 1) from the
// caller; CPU use is an int in thousandths. The same inputs give the same
// answers on every machine, so an hour of traffic is a loop over now.
//
// Elapsed time is measured with time.Time.Sub, so readings from time.Now are
// compared on the monotonic clock. Only [Counter] and an aligned [Period]
// read the wall clock's position (UnixNano), because they place windows on
// the calendar.
//
// Bad input never panics. Draws that are NaN or negative are taken as 0 and
// draws at or over 1 as the largest value below 1; CPU readings are held to
// 0..1000; negative rates, sizes and spans are clamped as each constructor
// documents; a now that goes backwards is handled as each type documents, and
// never leaves a window that stops ageing for longer than its own span.
//
// Unless a type says otherwise, its values are not safe for concurrent use:
// keep one per owner and call it under the owner's lock. The decisions
// allocate nothing.
package ward
