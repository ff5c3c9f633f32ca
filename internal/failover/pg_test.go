package failover

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	pgxward "github.com/wardpool/wardpool/drivers/pgx"
	"github.com/wardpool/wardpool/internal/servers"
	"github.com/wardpool/wardpool/internal/testenv"
	"github.com/wardpool/wardpool/pool"
	"github.com/wardpool/wardpool/ward"
)

// wardClassifies says whether the drivers retire a node's whole
// generation on the errors that say it moved (pgxward on 25006, redisward
// on READONLY: issue 26, part 1). Until they do, the goals that need it
// are reported, not asserted.
const wardClassifies = true

// pgPool is what the scenarios use of pgxward.Pool and pgxpool.Pool.
type pgPool interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Close()
}

// side is one of the two pools of a scenario, with its own proxies.
type side struct {
	name    string
	pool    pgPool
	proxies []*servers.Proxy
	stop    func() []op
	ops     []op
}

// names of the two sides, also their application_name on the server.
var pgSides = []string{"pgxward", "pgxpool"}

// wardedSides adds a third side: pgxward with a ward in front of its
// dials (the default Backoff and a Bucket of 50 dials a second, 8 at
// once) and its lifetimes spread (MaxConnLifetimeJitter of half the
// lifetime), to show what the ward does to the dials of a recovery and
// the jitter to the reconnects that follow it.
var wardedSides = []string{"pgxward", "pgxward+ward", "pgxpool"}

// promotionSides adds a fourth side to the warded ones: pgxward holding
// its callers through the failover (HoldOnFailover), one dial every
// 100 ms looking for the new primary while they wait.
var promotionSides = []string{"pgxward", "pgxward+hold", "pgxward+ward", "pgxpool"}

// promotionHold is the hold of the pgxward+hold side: longer than the
// promotion takes, so that it ends by finding the new primary.
const promotionHold = 10 * time.Second

// pgxwardHoldEvery is the spacing of a hold's dials, which pgxward leaves
// at the Keeper's default.
const pgxwardHoldEvery = pool.DefaultHoldEvery

// openPG opens the named pool on dsn with room for maxConns connections
// and a lifetime of life (none when zero); it is closed when the test ends.
func openPG(t *testing.T, name, dsn string, maxConns int32, life time.Duration) pgPool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var p pgPool
	switch name {
	case "pgxward", "pgxward+ward", "pgxward+hold":
		cfg, err := pgxward.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		if name == "pgxward+ward" {
			b := ward.DefaultBackoff
			cfg.Ward = ward.Ward{Backoff: &b, Bucket: ward.NewBucket(50, 8, time.Now())}
		}
		if name == "pgxward+hold" {
			cfg.HoldOnFailover = promotionHold
		}
		cfg.MaxConns = maxConns
		if life > 0 {
			cfg.MaxConnLifetime = life
			if name == "pgxward+ward" {
				cfg.MaxConnLifetimeJitter = life / 2
			}
		}
		wp, err := pgxward.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		p = wp
	default:
		cfg, err := pgxpool.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		cfg.MaxConns = maxConns
		if life > 0 {
			cfg.MaxConnLifetime = life
		}
		pp, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		p = pp
	}
	t.Cleanup(p.Close)
	return p
}

// write is the load's call: one insert, answering which server and which
// backend took it.
func write(p pgPool) func(ctx context.Context) (int, int, error) {
	return func(ctx context.Context) (int, int, error) {
		var port, pid int
		err := p.QueryRow(ctx, "INSERT INTO t (v) VALUES (1) RETURNING inet_server_port(), pg_backend_pid()").Scan(&port, &pid)
		return port, pid, err
	}
}

// dsnVia is a connection string through the given proxies, in order.
func dsnVia(app string, proxies []*servers.Proxy, extra string) string {
	hosts := ""
	for i, p := range proxies {
		if i > 0 {
			hosts += ","
		}
		hosts += p.Addr
	}
	return fmt.Sprintf("postgres://postgres@%s/postgres?sslmode=disable&application_name=%s%s", hosts, app, extra)
}

// mustExec runs sql on s or fails the test.
func mustExec(t *testing.T, s *servers.Postgres, sql string) {
	t.Helper()
	if err := s.Exec(sql); err != nil {
		t.Fatalf("%s on port %d: %v", sql, s.Port, err)
	}
}

// sleep waits d; the harness moves servers in real time, so it sleeps.
func sleep(d time.Duration) { time.Sleep(d) }

// TestPromotion stops the primary and promotes the standby under 32
// writers per pool, each pool listing both servers (through proxies of its
// own, which count dials and open connections per server) with
// target_session_attrs=read-write.
func TestPromotion(t *testing.T) {
	needFull(t)
	primary := servers.StartPostgres(t)
	mustExec(t, primary, "CREATE TABLE t (id bigserial, v int)")
	standby := servers.StartStandby(t, primary)
	if err := standby.WaitReplay(primary); err != nil {
		t.Fatal(err)
	}
	const writers = 32
	life := 3 * time.Second // Life, scaled down from minutes: see the ages table
	var sides []*side
	for _, name := range promotionSides {
		s := &side{name: name, proxies: []*servers.Proxy{
			servers.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", primary.Port)),
			servers.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", standby.Port)),
		}}
		s.pool = openPG(t, name, dsnVia(name, s.proxies, "&target_session_attrs=read-write&connect_timeout=2"), writers+8, life)
		sides = append(sides, s)
	}
	for _, s := range sides {
		s.stop = load(t, writers, time.Second, write(s.pool))
	}
	sleep(time.Second)
	tStop := time.Now()
	primary.Stop()
	tDown := time.Now()
	if err := standby.Promote(); err != nil {
		t.Fatal(err)
	}
	tProm := time.Now()
	sleep(time.Second)
	openOld := make([]int64, len(sides))
	for i, s := range sides {
		openOld[i] = s.proxies[0].Open()
	}
	// Run on for two lifetimes, then read the ages of the connections.
	sleep(2*life - time.Second)
	ages := backendAges(t, standby)
	for _, s := range sides {
		s.ops = s.stop()
	}
	tEnd := time.Now()

	rows := [][]string{{"", "writes failed", "first write on the new primary, after stop", "after promote", "open to old node 1 s after", "dials to standby before promote (per s)", "dials to new primary, 1st s", "calls", "errors"}}
	for i, s := range sides {
		nb := s.proxies[1]
		before := float64(nb.AcceptedBetween(tStop, tProm)) / max(tProm.Sub(tStop).Seconds(), 0.001)
		rows = append(rows, []string{s.name,
			fmt.Sprint(failedFrom(s.ops, tStop)),
			ms(firstOn(s.ops, standby.Port, tStop)), ms(firstOn(s.ops, standby.Port, tProm)),
			fmt.Sprint(openOld[i]),
			fmt.Sprintf("%.0f", before),
			fmt.Sprint(nb.AcceptedBetween(tProm, tProm.Add(time.Second))),
			fmt.Sprint(len(s.ops)), errorKinds(s.ops, tStop)})
	}
	table(t, fmt.Sprintf("promotion: %d writers per pool, primary stopped in %v, standby promoted in %v",
		writers, tDown.Sub(tStop).Round(time.Millisecond), tProm.Sub(tDown).Round(time.Millisecond)), rows)
	ageTable(t, life, tEnd.Sub(tProm), ages)

	for i, s := range sides {
		if firstOn(s.ops, standby.Port, tProm) < 0 {
			t.Errorf("%s: no write succeeded after the promotion", s.name)
		}
		if s.name == "pgxward+hold" {
			// Held: the hold begins at the reset, which the first
			// 57P01 a loan comes back with makes. A write begun after
			// it (give or take 100 ms: the loan is released around the
			// caller's error) fails only by its own deadline (1 s, which
			// a switchover on a loaded machine can outlast), never with
			// a dial's or the standby's error. The hold starts one dial
			// per 100 ms; the dials before the reset are not held, and
			// under load the reset comes late: the bound is twice the
			// hold's rate (the other sides dial the standby 68-121 times
			// a second).
			if reset, ok := first57P01(s.ops); !ok {
				t.Errorf("%s: no write failed with 57P01: the primary's stop was not seen", s.name)
			} else if n := startedFailed(s.ops, reset.Add(100*time.Millisecond)) - deadlines(s.ops, reset.Add(100*time.Millisecond)); n > 0 {
				t.Errorf("%s: %d writes begun after the reset failed other than by their deadline, want none", s.name, n)
			}
			secs := max(tProm.Sub(tStop).Seconds(), 0.001)
			if rate := float64(s.proxies[1].AcceptedBetween(tStop, tProm)) / secs; rate > 2/pgxwardHoldEvery.Seconds()+4/secs {
				t.Errorf("%s: %.0f dials a second to the read-only standby, want at most two per %v", s.name, rate, pgxwardHoldEvery)
			}
		}
		if openOld[i] != 0 {
			t.Logf("%s: %d connections still open to the stopped primary 1 s after the promotion", s.name, openOld[i])
		}
	}
}

// backendAges returns, per application name, the age of each backend of
// the two pools on s.
func backendAges(t *testing.T, s *servers.Postgres) map[string][]time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	rows, err := c.Query(ctx, "SELECT application_name, (extract(epoch FROM now() - backend_start) * 1000)::bigint FROM pg_stat_activity WHERE application_name = ANY($1)", promotionSides)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]time.Duration{}
	for rows.Next() {
		var app string
		var age int64
		if err := rows.Scan(&app, &age); err != nil {
			t.Fatal(err)
		}
		out[app] = append(out[app], time.Duration(age)*time.Millisecond)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// ageTable logs the spread of connection ages per pool: after a mass
// reconnect, connections whose lifetimes are not spread all end, and
// reconnect, together; pgxward+ward's, jittered, drift apart.
func ageTable(t *testing.T, life, since time.Duration, ages map[string][]time.Duration) {
	t.Helper()
	rows := [][]string{{"", "connections", "youngest", "median", "oldest", "distinct 100 ms births"}}
	for _, name := range promotionSides {
		a := ages[name]
		sort.Slice(a, func(i, j int) bool { return a[i] < a[j] })
		births := map[int64]bool{}
		for _, d := range a {
			births[d.Milliseconds()/100] = true
		}
		if len(a) == 0 {
			rows = append(rows, []string{name, "0", "", "", "", ""})
			continue
		}
		rows = append(rows, []string{name, fmt.Sprint(len(a)), ms(a[0]), ms(a[len(a)/2]), ms(a[len(a)-1]), fmt.Sprint(len(births))})
	}
	table(t, fmt.Sprintf("connection ages on the new primary %v after the promotion (lifetime %v; jitter: none but pgxward+ward's, half the lifetime)",
		since.Round(100*time.Millisecond), life), rows)
}

// TestDemotedWriter turns the node both pools write to read-only
// (default_transaction_read_only and a reload) while their proxies send
// new connections to another writable node.
func TestDemotedWriter(t *testing.T) {
	needFull(t)
	a := servers.StartPostgres(t)
	b := servers.StartPostgres(t)
	for _, s := range []*servers.Postgres{a, b} {
		mustExec(t, s, "CREATE TABLE t (id bigserial, v int)")
	}
	const writers = 32
	var sides []*side
	for _, name := range pgSides {
		s := &side{name: name, proxies: []*servers.Proxy{servers.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", a.Port))}}
		s.pool = openPG(t, name, dsnVia(name, s.proxies, "&connect_timeout=2"), writers+8, 0)
		sides = append(sides, s)
	}
	for _, s := range sides {
		s.stop = load(t, writers, time.Second, write(s.pool))
	}
	sleep(time.Second)
	tEv := time.Now()
	for _, s := range sides {
		s.proxies[0].Switch(fmt.Sprintf("127.0.0.1:%d", b.Port))
	}
	mustExec(t, a, "ALTER SYSTEM SET default_transaction_read_only = on")
	mustExec(t, a, "SELECT pg_reload_conf()")
	sleep(2 * time.Second)
	for _, s := range sides {
		s.ops = s.stop()
	}

	rows := [][]string{{"", "writes failed", "after 1 s", "lent to the read-only node after the first 25006", "first write on the new node", "dials to it, 1st s", "calls", "errors"}}
	type goal struct {
		lentRO, failed, late int
	}
	goals := map[string]goal{}
	for _, s := range sides {
		var first time.Time
		for _, o := range s.ops {
			if sqlState(o.err) == "25006" && (first.IsZero() || o.end.Before(first)) {
				first = o.end
			}
		}
		lentRO := 0
		for _, o := range s.ops {
			if !first.IsZero() && o.start.After(first) && (sqlState(o.err) == "25006" || (o.err == nil && o.node == a.Port)) {
				lentRO++
			}
		}
		newNode := firstOn(s.ops, b.Port, tEv)
		g := goal{lentRO: lentRO, failed: failedFrom(s.ops, tEv), late: failedFrom(s.ops, tEv.Add(time.Second))}
		goals[s.name] = g
		rows = append(rows, []string{s.name, fmt.Sprint(g.failed), fmt.Sprint(g.late), fmt.Sprint(lentRO), ms(newNode),
			fmt.Sprint(s.proxies[0].AcceptedBetween(tEv, tEv.Add(time.Second))), fmt.Sprint(len(s.ops)), errorKinds(s.ops, tEv)})
	}
	table(t, fmt.Sprintf("demoted writer: %d writers per pool, loans out at most %d", writers, writers), rows)

	g := goals["pgxward"]
	report := t.Logf
	if wardClassifies {
		report = t.Errorf
	}
	if g.lentRO != 0 {
		report("pgxward lent a connection to the read-only node %d times after the first 25006; goal 0", g.lentRO)
	}
	if g.failed > writers {
		report("pgxward: %d writes failed; goal at most the %d loans out", g.failed, writers)
	}
	if g.late != 0 {
		report("pgxward: %d writes failed more than 1 s after the demotion; goal 0", g.late)
	}
}

// TestBlackHole stops both pools' proxies from forwarding anything, in
// either direction and without closing anything, for 10 s in the full run
// (2 s otherwise) under load, then lifts it.
func TestBlackHole(t *testing.T) {
	srv := servers.StartPostgres(t)
	mustExec(t, srv, "CREATE TABLE t (id bigserial, v int)")
	hole := 2 * time.Second
	if testenv.Full() {
		hole = 10 * time.Second
	}
	const writers = 16
	const timeout = 500 * time.Millisecond
	var sides []*side
	for _, name := range wardedSides {
		s := &side{name: name, proxies: []*servers.Proxy{servers.StartProxy(t, fmt.Sprintf("127.0.0.1:%d", srv.Port))}}
		s.pool = openPG(t, name, dsnVia(name, s.proxies, ""), writers+4, 0)
		sides = append(sides, s)
	}
	for _, s := range sides {
		s.stop = load(t, writers, timeout, write(s.pool))
	}
	sleep(time.Second)
	tHole := time.Now()
	for _, s := range sides {
		s.proxies[0].BlackHole()
	}
	sleep(hole / 2)
	dialing := make([]int32, len(sides))
	for i, s := range sides {
		dialing[i] = constructing(s.pool)
	}
	sleep(hole - hole/2)
	tLift := time.Now()
	for _, s := range sides {
		s.proxies[0].Lift()
	}
	sleep(3 * time.Second)
	for _, s := range sides {
		s.ops = s.stop()
	}

	rows := [][]string{{"", "longest past ctx", "calls >100 ms past ctx", "failed", "dials during (in flight mid-way)", "recovered after lift", "old backends used 1 s after lift", "dials, 1st s after lift", "errors"}}
	over := map[string]time.Duration{}
	for i, s := range sides {
		old := map[int]bool{}
		late := 0
		for _, o := range s.ops {
			if o.err == nil && o.end.Before(tHole) {
				old[o.pid] = true
			}
			if o.end.Sub(o.deadline) > 100*time.Millisecond {
				late++
			}
		}
		reused := 0
		for _, o := range s.ops {
			if o.err == nil && o.start.After(tLift.Add(time.Second)) && old[o.pid] {
				reused++
			}
		}
		over[s.name] = overrun(s.ops)
		p := s.proxies[0]
		rows = append(rows, []string{s.name, ms(over[s.name]), fmt.Sprint(late), fmt.Sprint(failedFrom(s.ops, tHole)),
			fmt.Sprintf("%d (%d)", p.AcceptedBetween(tHole, tLift), dialing[i]), ms(firstOK(s.ops, tLift)),
			fmt.Sprint(reused), fmt.Sprint(p.AcceptedBetween(tLift, tLift.Add(time.Second))), errorKinds(s.ops, tHole)})
	}
	table(t, fmt.Sprintf("black hole: %v, %d writers per pool, %v per call", hole, writers, timeout), rows)

	// Loose: a caller may be held past its deadline by scheduling on a
	// busy machine, never by the black hole's length.
	if w, p := over["pgxward"], over["pgxpool"]; w > p+time.Second {
		t.Errorf("pgxward held a caller %v past its context, pgxpool %v", w, p)
	}
	for _, s := range sides {
		if firstOK(s.ops, tLift) < 0 {
			t.Errorf("%s: no write succeeded after the black hole lifted", s.name)
		}
	}
}

// constructing returns how many connections the pool is opening now.
func constructing(p pgPool) int32 {
	switch p := p.(type) {
	case *pgxward.Pool:
		return p.Stat().ConstructingConns()
	case *pgxpool.Pool:
		return p.Stat().ConstructingConns()
	}
	return -1
}
