package sqlward

import "database/sql/driver"

// stmtCache is one connection's prepared statements, by query, kept across
// loans so that a statement prepared on the *sql.DB (db.Prepare), which
// database/sql prepares again on every connection it borrows, is prepared
// once per connection of the pool. It holds at most max statements; when
// full, the statement used least recently among those no open stmt holds
// makes room, and when every one is held, a new statement is not kept.
//
// A connection is used by one borrower at a time (see conn), so the cache
// needs no lock.
type stmtCache struct {
	max  int
	tick uint64 // counts uses, for least recently used
	m    map[string]*cachedStmt
}

// cachedStmt is one statement of a stmtCache.
type cachedStmt struct {
	query   string
	base    driver.Stmt
	refs    int    // open stmt values handed out for it
	used    uint64 // the cache's tick at its latest use
	dropped bool   // out of the cache: closed when refs reaches 0
}

func newStmtCache(max int) *stmtCache {
	return &stmtCache{max: max, m: make(map[string]*cachedStmt)}
}

// get returns the statement kept for query, or nil.
func (c *stmtCache) get(query string) *cachedStmt {
	cs := c.m[query]
	if cs != nil {
		c.tick++
		cs.used = c.tick
	}
	return cs
}

// put keeps s, just prepared for query, and returns its entry, with the
// statement that made room for it (for the caller to close); it returns
// nil, nil when the cache is full of statements in use and s is not kept.
func (c *stmtCache) put(query string, s driver.Stmt) (cs *cachedStmt, evicted driver.Stmt) {
	if len(c.m) >= c.max {
		var oldest string
		var victim *cachedStmt
		for q, e := range c.m {
			if e.refs == 0 && (victim == nil || e.used < victim.used) {
				oldest, victim = q, e
			}
		}
		if victim == nil {
			return nil, nil
		}
		delete(c.m, oldest)
		evicted = victim.base
	}
	c.tick++
	cs = &cachedStmt{query: query, base: s, used: c.tick}
	c.m[query] = cs
	return cs, evicted
}

// drop takes cs out of the cache after it failed (the server may have
// forgotten it, or its plan no longer fits the table): the next Prepare of
// its query prepares afresh. The stmt that failed still holds cs, and the
// last Close of a stmt holding it closes the driver's statement.
func (c *stmtCache) drop(cs *cachedStmt) {
	cs.dropped = true
	if c.m[cs.query] == cs {
		delete(c.m, cs.query)
	}
}

// closeAll closes every statement kept, as the connection closes, and
// empties the cache.
func (c *stmtCache) closeAll() {
	for q, e := range c.m {
		_ = e.base.Close() // the connection is closing; database/sql ignores these too
		delete(c.m, q)
	}
}
