package redisward

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// FromFailoverOptions returns a Config for a pool whose connections go to
// the master that Redis Sentinel names fo.MasterName, as go-redis's
// NewFailoverClient does: every dial asks the Sentinels in
// fo.SentinelAddrs, in order, for the master's address (SENTINEL
// get-master-addr-by-name, on a connection opened for the question and
// closed after it, with fo.SentinelUsername and fo.SentinelPassword) and
// connects there, through fo.Dialer when it is set, else over TCP (TLS
// when fo.TLSConfig is set). The connection fields (credentials, DB,
// Protocol, ClientName, OnConnect, timeouts, buffer sizes, TLS) and the
// pool fields mean what they mean in FromOptions; the returned
// Config.Options.Addr is fo.MasterName, which names the pool.
//
// Unlike NewFailoverClient, the pool does not listen for Sentinel's
// +switch-master: connections already open to the old master stay until
// a command on one of them fails. A READONLY reply (the old master is a
// replica now) retires them all by default (Config.Classify: idle ones at
// once, lent ones as they come back); a network error destroys the one
// connection. New connections follow the new master. Routing reads to replicas
// (RouteByLatency, RouteRandomly, ReplicaOnly) is not offered: those
// options are refused with ErrConfig, as is a fo without MasterName or
// SentinelAddrs.
func FromFailoverOptions(fo *redis.FailoverOptions) (Config, error) {
	switch {
	case fo == nil:
		return Config{}, fmt.Errorf("redisward: %w: FailoverOptions is nil", ErrConfig)
	case fo.MasterName == "":
		return Config{}, fmt.Errorf("redisward: %w: FailoverOptions.MasterName is empty", ErrConfig)
	case len(fo.SentinelAddrs) == 0:
		return Config{}, fmt.Errorf("redisward: %w: FailoverOptions.SentinelAddrs is empty", ErrConfig)
	case fo.RouteByLatency || fo.RouteRandomly || fo.ReplicaOnly:
		return Config{}, fmt.Errorf("redisward: %w: FailoverOptions routes to replicas (RouteByLatency, RouteRandomly or ReplicaOnly): a pool serves the master only", ErrConfig)
	}
	o := &redis.Options{
		Addr:                       fo.MasterName,
		ClientName:                 fo.ClientName,
		OnConnect:                  fo.OnConnect,
		Protocol:                   fo.Protocol,
		Username:                   fo.Username,
		Password:                   fo.Password,
		CredentialsProvider:        fo.CredentialsProvider,
		CredentialsProviderContext: fo.CredentialsProviderContext,
		DB:                         fo.DB,
		MaxRetries:                 fo.MaxRetries,
		MinRetryBackoff:            fo.MinRetryBackoff,
		MaxRetryBackoff:            fo.MaxRetryBackoff,
		DialTimeout:                fo.DialTimeout,
		ReadTimeout:                fo.ReadTimeout,
		WriteTimeout:               fo.WriteTimeout,
		ContextTimeoutEnabled:      fo.ContextTimeoutEnabled,
		ReadBufferSize:             fo.ReadBufferSize,
		WriteBufferSize:            fo.WriteBufferSize,
		PoolSize:                   fo.PoolSize,
		MinIdleConns:               fo.MinIdleConns,
		MaxIdleConns:               fo.MaxIdleConns,
		MaxActiveConns:             fo.MaxActiveConns,
		ConnMaxIdleTime:            fo.ConnMaxIdleTime,
		ConnMaxLifetime:            fo.ConnMaxLifetime,
		TLSConfig:                  fo.TLSConfig,
		DisableIdentity:            fo.DisableIdentity,
		IdentitySuffix:             fo.IdentitySuffix,
	}
	o.Dialer = masterDialer(fo)
	return FromOptions(o), nil
}

// masterDialer dials the master the Sentinels of fo name now.
func masterDialer(fo *redis.FailoverOptions) func(ctx context.Context, network, _ string) (net.Conn, error) {
	timeout := fo.DialTimeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	// A copy: changing fo after the Config is built changes nothing.
	sentinels := append([]string(nil), fo.SentinelAddrs...)
	name, user, password := fo.MasterName, fo.SentinelUsername, fo.SentinelPassword
	dial, tlsConfig := fo.Dialer, fo.TLSConfig
	nd := netDialer(timeout, DefaultDeadPeerTimeout)
	return func(ctx context.Context, network, _ string) (net.Conn, error) {
		addr, err := askSentinels(ctx, sentinels, name, user, password, timeout, dial, tlsConfig)
		if err != nil {
			return nil, err
		}
		if dial != nil {
			return dial(ctx, network, addr)
		}
		if tlsConfig != nil {
			td := &tls.Dialer{NetDialer: nd, Config: tlsConfig}
			return td.DialContext(ctx, network, addr)
		}
		return nd.DialContext(ctx, network, addr)
	}
}

// askSentinels returns the master address the first Sentinel that answers
// gives for name.
func askSentinels(ctx context.Context, sentinels []string, name, user, password string, timeout time.Duration,
	dial func(context.Context, string, string) (net.Conn, error), tlsConfig *tls.Config) (string, error) {
	var errs []error
	for _, s := range sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s, Username: user, Password: password,
			Dialer: dial, TLSConfig: tlsConfig, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
			MaxRetries: -1, DialerRetries: 1, PoolSize: 1, ContextTimeoutEnabled: true})
		a, err := sc.GetMasterAddrByName(ctx, name).Result()
		_ = sc.Close()
		if err == nil && len(a) == 2 {
			return net.JoinHostPort(a[0], a[1]), nil
		}
		switch {
		case errors.Is(err, redis.Nil):
			err = errors.New("does not know this master")
		case err == nil:
			err = fmt.Errorf("answered %q", a)
		}
		errs = append(errs, fmt.Errorf("sentinel %s: %w", s, err))
		if ctx.Err() != nil {
			break
		}
	}
	return "", fmt.Errorf("redisward: no Sentinel gave the master %q: %w", name, errors.Join(errs...))
}
