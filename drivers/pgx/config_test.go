package pgxward

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

const base = "postgres://jack:s3cret@127.0.0.1:5432/mydb?sslmode=disable"

// TestParseConfigMatchesPgxpool parses the same strings with ParseConfig
// and pgxpool.ParseConfig and wants the same figures: defaults and every
// option.
func TestParseConfigMatchesPgxpool(t *testing.T) {
	for _, s := range []string{
		base,
		base + "&pool_max_conns=17&pool_min_conns=3&pool_min_idle_conns=2" +
			"&pool_max_conn_lifetime=1h30m&pool_max_conn_lifetime_jitter=45s" +
			"&pool_max_conn_idle_time=90s&pool_health_check_period=7s&pool_ping_timeout=250ms",
		"host=127.0.0.1 user=jack password=s3cret dbname=mydb pool_max_conns=5 pool_max_conn_idle_time=1m",
		base + "&pool_max_conn_lifetime=0s&pool_max_conn_idle_time=-1s",
	} {
		ours, err := ParseConfig(s)
		if err != nil {
			t.Fatalf("ParseConfig(%q): %v", s, err)
		}
		theirs, err := pgxpool.ParseConfig(s)
		if err != nil {
			t.Fatalf("pgxpool.ParseConfig(%q): %v", s, err)
		}
		got := []any{ours.MaxConns, ours.MinConns, ours.MinIdleConns, ours.MaxConnLifetime,
			ours.MaxConnLifetimeJitter, ours.MaxConnIdleTime, ours.HealthCheckPeriod, ours.PingTimeout}
		want := []any{theirs.MaxConns, theirs.MinConns, theirs.MinIdleConns, theirs.MaxConnLifetime,
			theirs.MaxConnLifetimeJitter, theirs.MaxConnIdleTime, theirs.HealthCheckPeriod, theirs.PingTimeout}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%q: field %d = %v, pgxpool has %v", s, i, got[i], want[i])
			}
		}
		for k := range ours.ConnConfig.RuntimeParams {
			if strings.HasPrefix(k, "pool_") {
				t.Errorf("%q: %s left among the server's runtime parameters", s, k)
			}
		}
		if ours.ConnString() != s {
			t.Errorf("ConnString() = %q, want %q", ours.ConnString(), s)
		}
	}
}

func TestParseConfigDefaults(t *testing.T) {
	c, err := ParseConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxConns != DefaultMaxConns() || c.MaxConns < 4 || c.MinConns != 0 || c.MinIdleConns != 0 ||
		c.MaxConnLifetime != time.Hour || c.MaxConnIdleTime != 30*time.Minute ||
		c.HealthCheckPeriod != time.Minute || c.MaxConnLifetimeJitter != 0 || c.PingTimeout != 0 {
		t.Errorf("defaults: %+v", c)
	}
	if !c.Ward.IsZero() || c.LeakAfter != 0 {
		t.Errorf("ward or leak watch on by default: %+v", c)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, s := range []string{
		"postgres://jack:s3cret@127.0.0.1:notaport/mydb",
		"postgres://jack:s3cret@127.0.0.1:5432/mydb?%zz",
		base + "&pool_max_conns=0",
		base + "&pool_max_conns=-3",
		base + "&pool_max_conns=lots",
		base + "&pool_max_conns=99999999999",
		base + "&pool_min_conns=-1",
		base + "&pool_min_idle_conns=x",
		base + "&pool_max_conn_lifetime=1 hour",
		base + "&pool_max_conn_lifetime_jitter=fast",
		base + "&pool_max_conn_idle_time=10",
		base + "&pool_health_check_period=soon",
		base + "&pool_ping_timeout=x",
	} {
		c, err := ParseConfig(s)
		if err == nil {
			t.Errorf("ParseConfig(%q) = %+v, want an error", s, c)
			continue
		}
		var pe *pgconn.ParseConfigError
		if !errors.As(err, &pe) {
			t.Errorf("ParseConfig(%q): %T %v, want a *pgconn.ParseConfigError", s, err, err)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseConfig(%q): the error shows the password: %v", s, err)
		}
		if _, err := New(context.Background(), s); err == nil {
			t.Errorf("New(%q) succeeded", s)
		}
	}
}

func TestNewWithConfigRefuses(t *testing.T) {
	good, err := ParseConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*Config{
		"nil":       nil,
		"hand made": {ConnConfig: good.ConnConfig, MaxConns: 4},
		"no conns":  func() *Config { c := good.Copy(); c.MaxConns = 0; return c }(),
		"min < 0":   func() *Config { c := good.Copy(); c.MinIdleConns = -1; return c }(),
		"jitter":    func() *Config { c := good.Copy(); c.MaxConnLifetimeJitter = -time.Second; return c }(),
		"leak < 0":  func() *Config { c := good.Copy(); c.LeakAfter = -time.Second; return c }(),
	} {
		p, err := NewWithConfig(context.Background(), c)
		if !errors.Is(err, ErrConfig) {
			t.Errorf("%s: NewWithConfig = %v, %v; want ErrConfig", name, p, err)
		}
	}
}

// TestConfigCopy: changing a copy leaves the original alone, connection
// settings included.
func TestConfigCopy(t *testing.T) {
	c, err := ParseConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	d := c.Copy()
	d.MaxConns = 99
	d.ConnConfig.RuntimeParams["application_name"] = "other"
	if c.MaxConns == 99 || c.ConnConfig.RuntimeParams["application_name"] == "other" {
		t.Errorf("Copy shares state with the original")
	}
}
