package servers

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// PostgresBinVar names the environment variable holding the directory of
// PostgreSQL's server programs (initdb, pg_ctl, postgres, pg_basebackup).
// ./scripts/test sets it; when it is unset, the directory of an initdb on
// PATH is used.
const PostgresBinVar = "WARDPOOL_PG_BIN"

// Postgres is one PostgreSQL server of the test's own: a cluster in a
// directory of its own, listening on 127.0.0.1 at a port of its own, with
// trust authentication for the user postgres (loopback only). When the test
// runs as root, the server runs as the postgres user, which owns the
// directory.
type Postgres struct {
	// Port is the server's TCP port on 127.0.0.1, the same across restarts.
	Port int
	// Dir holds the cluster (Dir/data), its socket and its log (Dir/log).
	Dir string
	// Host is the address DSN connects to: 127.0.0.1, or for a server in
	// a network namespace (StartPostgresIn) the namespace's first address.
	Host string

	ns      *Netns // the namespace the server runs in, or nil
	bin     string
	mu      sync.Mutex // guards running
	running bool
}

// PostgresBin returns the directory of PostgreSQL's server programs, or
// skips the test with a message saying how to get them.
func PostgresBin(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(PostgresBinVar)
	if dir == "" {
		if p, err := exec.LookPath("initdb"); err == nil {
			dir = filepath.Dir(p)
		}
	}
	for _, prog := range []string{"initdb", "pg_ctl", "postgres", "pg_basebackup"} {
		if dir == "" {
			break
		}
		if _, err := os.Stat(filepath.Join(dir, prog)); err != nil {
			dir = ""
		}
	}
	if dir == "" {
		t.Skipf("no PostgreSQL server programs: set %s to the directory holding initdb, pg_ctl and pg_basebackup (./scripts/test does), or put initdb on PATH", PostgresBinVar)
	}
	return dir
}

// StartPostgres makes a new cluster with initdb and starts it. It is
// stopped (immediately, without a checkpoint) and deleted when the test
// ends.
func StartPostgres(t testing.TB) *Postgres {
	t.Helper()
	return startPostgres(t, nil)
}

// StartPostgresIn is StartPostgres in the network namespace ns: the server
// listens on every address of ns (and on the namespace's own loopback),
// and DSN connects to ns.Addrs[0], over the namespace's link.
func StartPostgresIn(t testing.TB, ns *Netns) *Postgres {
	t.Helper()
	return startPostgres(t, ns)
}

func startPostgres(t testing.TB, ns *Netns) *Postgres {
	t.Helper()
	p := newPostgres(t)
	if ns != nil {
		p.ns, p.Host = ns, ns.Addrs[0]
	}
	if out, err := p.as(p.prog("initdb"), "-D", p.data(), "-U", "postgres", "-E", "UTF8", "--locale=C",
		"--auth=trust", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("servers: initdb: %v\n%s", err, out)
	}
	p.configure(t)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

// StartStandby makes a streaming replica of primary with pg_basebackup -R
// and starts it: a hot standby that answers reads and refuses writes until
// Promote. It is stopped and deleted when the test ends.
func StartStandby(t testing.TB, primary *Postgres) *Postgres {
	t.Helper()
	p := newPostgres(t)
	if out, err := p.as(p.prog("pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(primary.Port),
		"-U", "postgres", "-D", p.data(), "-R", "-X", "stream", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("servers: pg_basebackup: %v\n%s", err, out)
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	return p
}

func newPostgres(t testing.TB) *Postgres {
	t.Helper()
	bin := PostgresBin(t)
	// Not t.TempDir: its parents are private to this user, and the server
	// runs as postgres when we are root.
	dir, err := os.MkdirTemp("", "wardpool-pg-")
	if err != nil {
		t.Fatal(err)
	}
	p := &Postgres{Port: FreePort(t), Dir: dir, Host: "127.0.0.1", bin: bin}
	t.Cleanup(func() {
		p.end("immediate")
		_ = os.RemoveAll(dir)
	})
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skipf("running as root and there is no postgres user to run the server as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		// The parents of dir must let that user through.
		if out, err := exec.Command("runuser", "-u", "postgres", "--", "test", "-w", dir).CombinedOutput(); err != nil {
			t.Skipf("the postgres user cannot reach %s (point TMPDIR at a directory it can traverse): %v %s", dir, err, out)
		}
	}
	return p
}

func (p *Postgres) prog(name string) string { return filepath.Join(p.bin, name) }
func (p *Postgres) data() string            { return filepath.Join(p.Dir, "data") }

// as is a command run as the cluster's owner, in its directory, and in
// its network namespace when it has one.
func (p *Postgres) as(args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		args = append([]string{"runuser", "-u", "postgres", "--"}, args...)
	}
	var cmd *exec.Cmd
	if p.ns != nil {
		cmd = p.ns.Command(args[0], args[1:]...)
	} else {
		cmd = exec.Command(args[0], args[1:]...)
	}
	cmd.Dir = p.Dir
	return cmd
}

// configure appends the settings of a loopback-only, disposable server
// that a standby can replicate from.
func (p *Postgres) configure(t testing.TB) {
	t.Helper()
	conf := strings.Join([]string{
		"",
		"# a test's own server: loopback only, fast and disposable",
		"listen_addresses = '127.0.0.1'",
		"unix_socket_directories = '" + p.Dir + "'",
		"max_connections = 300",
		"fsync = off",
		"synchronous_commit = off",
		"full_page_writes = off",
		"wal_level = replica",
		"max_wal_senders = 5",
		"hot_standby = on",
		"",
	}, "\n")
	if p.ns != nil {
		conf += "listen_addresses = '*' # the namespace's addresses and loopback\n"
		hba := p.as("tee", "-a", filepath.Join(p.data(), "pg_hba.conf"))
		hba.Stdin = strings.NewReader("\n# the test's end of the namespace's link\nhost all all 198.18.0.0/15 trust\n")
		if out, err := hba.CombinedOutput(); err != nil {
			t.Fatalf("servers: write pg_hba.conf: %v\n%s", err, out)
		}
	}
	cmd := p.as("tee", "-a", filepath.Join(p.data(), "postgresql.conf"))
	cmd.Stdin = strings.NewReader(conf)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("servers: write postgresql.conf: %v\n%s", err, out)
	}
}

// DSN returns a connection string for the postgres user and database on
// this server, with extra parameters appended (for example
// "application_name=w").
func (p *Postgres) DSN(extra ...string) string {
	q := append([]string{"sslmode=disable"}, extra...)
	return fmt.Sprintf("postgres://postgres@%s:%d/postgres?%s", p.Host, p.Port, strings.Join(q, "&"))
}

// Start starts the server (a no-op while it runs) and waits, up to 60 s,
// until it accepts connections.
func (p *Postgres) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		return nil
	}
	out, err := p.as(p.prog("pg_ctl"), "-D", p.data(), "-l", filepath.Join(p.Dir, "log"),
		"-o", fmt.Sprintf("-p %d -k %s", p.Port, p.Dir), "-w", "-t", "60", "start").CombinedOutput()
	if err != nil {
		return fmt.Errorf("servers: pg_ctl start on port %d: %v\n%s\n%s", p.Port, err, out, p.tail())
	}
	p.running = true
	return nil
}

// Stop shuts the server down the way pg_ctl -m fast does (sessions end
// with 57P01 admin_shutdown) and waits for it. It is safe to call when the
// server is not running.
func (p *Postgres) Stop() { p.end("fast") }

func (p *Postgres) end(mode string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running {
		return
	}
	p.running = false
	_ = p.as(p.prog("pg_ctl"), "-D", p.data(), "-m", mode, "-w", "-t", "30", "stop").Run()
}

// Promote turns a standby into a primary (pg_ctl promote) and waits until
// it accepts writes.
func (p *Postgres) Promote() error {
	out, err := p.as(p.prog("pg_ctl"), "-D", p.data(), "-w", "-t", "60", "promote").CombinedOutput()
	if err != nil {
		return fmt.Errorf("servers: pg_ctl promote on port %d: %v\n%s", p.Port, err, out)
	}
	return nil
}

// Exec runs one statement on a connection of its own, within 10 s.
func (p *Postgres) Exec(sql string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, p.DSN())
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, sql)
	return err
}

// WaitReplay waits, up to 30 s, until the standby has replayed what its
// primary had written when it was called, so a table made on the primary
// is there to read.
func (p *Postgres) WaitReplay(primary *Postgres) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pc, err := pgx.Connect(ctx, primary.DSN())
	if err != nil {
		return err
	}
	defer pc.Close(context.Background())
	var lsn string
	if err := pc.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&lsn); err != nil {
		return err
	}
	sc, err := pgx.Connect(ctx, p.DSN())
	if err != nil {
		return err
	}
	defer sc.Close(context.Background())
	for {
		var done bool
		err := sc.QueryRow(ctx, "SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn).Scan(&done)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("servers: standby on port %d did not replay %s: %w", p.Port, lsn, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// tail returns the end of the server's log, for an error message.
func (p *Postgres) tail() string {
	b, _ := os.ReadFile(filepath.Join(p.Dir, "log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
