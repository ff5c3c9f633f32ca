package redisward

import (
	"strings"

	"github.com/wardpool/wardpool"
)

// DefaultClassify is the classifier a Pool uses when Config.Classify is
// nil. It answers wardpool.Reset, with the reply's first word as cause,
// for the error replies that say every connection to this server is
// wrong now:
//
//   - READONLY: the server became a replica (a Sentinel or cluster
//     failover demoted it) and refuses writes;
//   - MASTERDOWN: a replica lost its primary and serves no stale data;
//   - LOADING: the server is loading its dataset after a restart.
//
// It answers wardpool.Full, cause "maxclients", for "ERR max number of
// clients reached", the reply to a new connection's first command when the
// server holds maxclients already: a dial refused so, while the pool has
// other connections, does not fail its caller, who waits for one of them
// to come back (see pool.Pool.Unmade).
//
// Every other error is wardpool.Reuse: a reply such as WRONGTYPE is the
// command's own failure. Errors that are not replies from the server
// never reach a classifier (see Config.Classify).
func DefaultClassify(err error) (wardpool.Verdict, string) {
	re, ok := replyError(err)
	if !ok {
		return wardpool.Reuse, ""
	}
	msg := re.Error()
	if msg == "ERR max number of clients reached" {
		return wardpool.Full, "maxclients"
	}
	for _, word := range [...]string{"READONLY", "MASTERDOWN", "LOADING"} {
		if strings.HasPrefix(msg, word) && (len(msg) == len(word) || msg[len(word)] == ' ') {
			return wardpool.Reset, word
		}
	}
	return wardpool.Reuse, ""
}

// classify is the Keeper's Classify. Connections hold it as a method of
// the Pool, not of the Keeper: the first of them are dialled while New
// builds the Keeper, before p.k is set, and p.k is read only when a
// borrower's command fails, after New has returned.
func (p *Pool) classify(err error) (wardpool.Verdict, string) { return p.k.Classify(err) }

// resetNote is the reply that earned a connection's loan a Reset verdict:
// its cause and the error.
type resetNote struct {
	cause string
	err   error
}

// judge classifies err, an error reply a command on c got, and marks c:
// Destroy and Reset make it unfit, and Reset notes why, for the loan's
// end (the first such reply of a loan is kept).
func (c *conn) judge(err error) {
	if c.classify == nil {
		return
	}
	switch v, cause := c.classify(err); v {
	case wardpool.Destroy:
		c.broken.Store(true)
	case wardpool.Reset:
		c.broken.Store(true)
		c.reset.CompareAndSwap(nil, &resetNote{cause: cause, err: err})
	}
}

// end ends loan l of c as the commands on it left c: with a Reset when one
// earned that verdict (l.Reset: once per generation), with Destroy when c
// is unfit, with Release otherwise. It reports whether c was unfit.
func (c *conn) end(l wardpool.Loan[*conn]) bool {
	if n := c.reset.Swap(nil); n != nil {
		l.Reset(n.cause, n.err)
		return true
	}
	if c.unfit() {
		l.Destroy()
		return true
	}
	l.Release()
	return false
}
