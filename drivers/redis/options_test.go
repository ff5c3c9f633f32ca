package redisward

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/wardpool/wardpool/pool"
)

// optionUse says what the driver does with each field of redis.Options.
// A field go-redis adds fails TestEveryOptionIsClassified until it is
// classified here, and the driver made to read or refuse it: no go-redis
// option is dropped in silence.
var optionUse = map[string]string{
	// Passed to every pooled connection's client (innerOptions) or used
	// by the pool's own dial (dialer) and timeouts.
	"Network": "used", "Addr": "used", "NodeAddress": "used", "ClientName": "used", "Dialer": "used",
	"OnConnect": "used", "Protocol": "used", "Username": "used", "Password": "used",
	"CredentialsProvider": "used", "CredentialsProviderContext": "used", "StreamingCredentialsProvider": "used",
	"DB": "used", "DialTimeout": "used", "ReadTimeout": "used", "WriteTimeout": "used",
	"ContextTimeoutEnabled": "used", "ReadBufferSize": "used", "WriteBufferSize": "used",
	"PipelineReadBufferSize": "used", "PipelineWriteBufferSize": "used", "TLSConfig": "used",
	"Limiter": "used", "DisableIndentity": "used", "DisableIdentity": "used", "IdentitySuffix": "used",
	"UnstableResp3": "used", "PushNotificationProcessor": "used", "FailingTimeoutSeconds": "used",
	"MinRetryBackoff": "used", "MaxRetryBackoff": "used", "DialerRetryTimeout": "used", "DialerRetryBackoff": "used",
	// The pool's resends of a command the server refused unrun (READONLY,
	// MASTERDOWN, LOADING): Config.Options' doc, Pool.Process.
	"MaxRetries": "used",
	// go-redis's pool: read by FromOptions and ParseURL into Limits and
	// MinIdle (Config.Options' doc); the Keeper is the pool.
	"PoolFIFO": "pool", "PoolSize": "pool", "MaxConcurrentDials": "pool", "PoolTimeout": "pool",
	"MinIdleConns": "pool", "MaxIdleConns": "pool", "MaxActiveConns": "pool", "ConnMaxIdleTime": "pool",
	"ConnMaxLifetime": "pool", "ConnMaxLifetimeJitter": "pool", "PipelinePoolSize": "pool",
	// Replaced on pooled connections, as Config.Options' doc says: a
	// connection's client never retries (the pool resends); each
	// connection is dialled once; notifications are off.
	"DialerRetries": "replaced", "AutoPipelineOptions": "replaced",
	"MaintNotificationsConfig": "replaced",
	// Refused by New with ErrConfig.
	"ClientSideCacheConfig": "refused", "ClientSideCache": "refused", "ClientSideCacheStrategy": "refused",
	"ClientSideCacheRefreshOnInvalidate": "refused", "ClientSideCacheCoalesceMisses": "refused",
	"ClientSideCacheInvalidationBatchWindow": "refused",
}

// TestEveryOptionIsClassified reflects over redis.Options: every field is
// classified in optionUse, and every field classified exists.
func TestEveryOptionIsClassified(t *testing.T) {
	typ := reflect.TypeFor[redis.Options]()
	seen := map[string]bool{}
	for f := range typ.Fields() {
		if !f.IsExported() {
			continue
		}
		seen[f.Name] = true
		if _, ok := optionUse[f.Name]; !ok {
			t.Errorf("redis.Options.%s is not classified: make the driver read it or refuse it, then add it to optionUse", f.Name)
		}
	}
	for name := range optionUse {
		if !seen[name] {
			t.Errorf("optionUse classifies %s, which redis.Options no longer has", name)
		}
	}
}

// TestClientSideCacheRefused: each client-side caching field, set alone,
// makes New fail with ErrConfig naming it, never a pool that reads past
// the cache; a Config without them builds.
func TestClientSideCacheRefused(t *testing.T) {
	ctx := context.Background()
	set := map[string]func(*redis.Options){
		"ClientSideCacheConfig":                  func(o *redis.Options) { o.ClientSideCacheConfig = &redis.ClientSideCacheConfig{} },
		"ClientSideCacheStrategy":                func(o *redis.Options) { o.ClientSideCacheStrategy = 1 },
		"ClientSideCacheRefreshOnInvalidate":     func(o *redis.Options) { o.ClientSideCacheRefreshOnInvalidate = true },
		"ClientSideCacheCoalesceMisses":          func(o *redis.Options) { o.ClientSideCacheCoalesceMisses = true },
		"ClientSideCacheInvalidationBatchWindow": func(o *redis.Options) { o.ClientSideCacheInvalidationBatchWindow = time.Millisecond },
	}
	for name, use := range optionUse {
		if use == "refused" && set[name] == nil && name != "ClientSideCache" {
			t.Errorf("no case sets refused field %s", name)
		}
	}
	for name, f := range set {
		o := &redis.Options{Addr: "127.0.0.1:1"}
		f(o)
		_, err := New(ctx, Config{Options: o, Limits: pool.Limits{Size: 1}, Lazy: true})
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "Options."+name) || !strings.Contains(err.Error(), "client-side caching") {
			t.Errorf("New with %s set = %v, want ErrConfig naming it", name, err)
		}
	}
	p, err := New(ctx, Config{Options: &redis.Options{Addr: "127.0.0.1:1"}, Limits: pool.Limits{Size: 1}, Lazy: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Close(ctx)
}
