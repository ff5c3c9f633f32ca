// Package conformance holds wardpool's decisions against three pools written
// by other people: SQLAlchemy's QueuePool, node-generic-pool and Apache
// Commons Pool 2's GenericObjectPool.
//
// The package exports nothing; it is its tests. They replay every committed
// trace (testdata/*.steps) against [github.com/wardpool/wardpool/pool.Pool],
// compare what it answers with wardpool's own recordings and with those of
// the references, and check that the generated traces and the table in
// README.md are what the committed files give. Run them with
//
//	go test ./conformance
//
// and rewrite wardpool's recordings, after reading the difference a failing
// test prints, with
//
//	go test ./conformance -rewrite
//
// The formats, the generator, Replay and the tally are in
// conformance/internal/trace; the commands that drive them (gen, replay,
// tally) in conformance/internal/cmd; the reference runners in
// scripts/reference. README.md describes it all.
package conformance
