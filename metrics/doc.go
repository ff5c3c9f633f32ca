// Package metrics exports a pool's figures to Prometheus and to
// OpenTelemetry, and logs its leak reports with log/slog.
//
// Each exporter reads a Source — a *wardpool.Keeper of any type, a driver's pool
// as it is (*pgxward.Pool, *sqlward.Connector, *redisward.Pool), or
// FromBooks for a pool.Pool under the caller's own lock — once per scrape or
// collection, and exports every figure of that one reading, so the figures
// of a scrape agree with each other (live = idle + busy).
//
//	reg.MustRegister(metrics.NewCollector(pgxPool, metrics.Options{Labels: map[string]string{"pool": "orders"}}))
//	registration, err := metrics.Observe(meter, keeper, metrics.Options{Labels: map[string]string{"pool": "orders"}})
//	cfg.OnLeak = metrics.OnLeak[*pgx.Conn](logger) // fits wardpool.Config[*pgx.Conn] and pgxward.Config
//	ctx, end := metrics.StartAcquire(ctx, tracer, pgxPool) // an OpenTelemetry span around an acquire
//
// For the distribution of acquire waits (the Keeper keeps their total), a
// WaitHistogram, native where the registry takes it, is fed by an
// AcquireObserver, which also opens the span; package metrics/pgxtrace does
// both for every acquire of a pgxward pool, as its tracer.
//
// # Series
//
// Names below are with the default namespace, wardpool; Options.Namespace
// and Options.Subsystem replace or extend it. Prometheus names come first,
// the OpenTelemetry name after the slash: OpenTelemetry's semantic
// conventions' db.client.connection.* where they name the figure (see
// Observe; also db.client.connection.idle.min from a Source's MinIdle, and
// the histograms of NewTimings), wardpool.* otherwise. Gauges are counts at the moment of
// the reading (OpenTelemetry: up-down counters); counters only rise from the
// pool's start.
//
// Gauges:
//
//	wardpool_live_resources / db.client.connection.count     resources that exist: idle, lent, being made
//	wardpool_idle_resources / db.client.connection.count{state=idle}  resources in the pool, ready to lend
//	wardpool_busy_resources / db.client.connection.count{state=used}  resources lent or being made
//	wardpool_waiting_acquires / db.client.connection.pending_requests  callers queued for a resource (Keeper only)
//	wardpool_dialing_resources / wardpool.resources.dialing  dials in flight (Keeper only)
//	wardpool_closing_resources / wardpool.resources.closing  resources waiting to be closed or being closed (Keeper only)
//	wardpool_breaker_refusal_ratio / wardpool.breaker.refusal  share of new connections the breaker refuses (Keeper only)
//	wardpool_max_resources / db.client.connection.max        Limits.Size, for a Source with Limits, when set
//	wardpool_max_idle_resources / db.client.connection.idle.max  Limits.Idle, for a Source with Limits, when set
//	wardpool_leaked_loans / wardpool.loans.leaked            loans out past LeakAfter now, for a Source with Leaked
//	wardpool_stalled / wardpool.stalled                      1 while a reported stall lasts (Keeper only)
//	wardpool_rotating_resources / wardpool.resources.rotating  resources of a generation being replaced over a window (Rotate; Keeper only)
//	wardpool_holding / wardpool.holding                  1 while callers are held through a failover (Config.Hold; Keeper only)
//	wardpool_class_held_resources{class} / wardpool.class.held  resources a class of callers holds: lent, being made (Config.Classes)
//	wardpool_class_waiting_acquires{class} / wardpool.class.waiting  callers of a class queued (Config.Classes)
//
// Counters:
//
//	wardpool_made_total / wardpool.made                      resources made and taken in
//	wardpool_make_failures_total / wardpool.make.failures    makes (dials) that failed
//	wardpool_loans_total / wardpool.loans                    resources lent
//	wardpool_reused_loans_total / wardpool.loans.reused      loans of an idle resource
//	wardpool_retired_total{reason} / wardpool.retired        resources let go and closed; reason is
//	                                                         idle (past Keep), life (past Life) or other
//	wardpool_dropped_total / wardpool.dropped                destroyed or hijacked resources
//	wardpool_waited_total / wardpool.waited                  acquires that found the pool full
//	wardpool_deferred_total / wardpool.deferred              acquires the ward told to come back later
//	wardpool_shed_total / wardpool.shed                      acquires the ward refused
//	wardpool_acquires_total / wardpool.acquires              successful acquires (Keeper only)
//	wardpool_acquire_wait_seconds_total / wardpool.acquire.wait  their total wait, seconds (Keeper only)
//	wardpool_empty_acquires_total / wardpool.acquires.empty  successful acquires that had to wait or dial (Keeper only)
//	wardpool_canceled_acquires_total / db.client.connection.timeouts  acquires ended by their context or AcquireTimeout (Keeper only)
//	wardpool_checks_total / wardpool.checks                  health checks on borrow (Keeper only)
//	wardpool_check_failures_total / wardpool.check.failures  failed health checks (Keeper only)
//	wardpool_leaks_total / wardpool.leaks                    loans held past LeakAfter (Keeper only)
//	wardpool_double_releases_total / wardpool.double_releases  calls on an ended loan, ignored (Keeper only)
//	wardpool_panics_total / wardpool.panics                  panics recovered in the hooks (Keeper only)
//	wardpool_resets_total{cause} / wardpool.resets           resets: every resource made before retired, by
//	                                                         cause (25006, READONLY, manual, …; Keeper only)
//	wardpool_closed_total / wardpool.closed                  closes done (closing runs in the background) (Keeper only)
//	wardpool_dial_timeouts_total / wardpool.dial.timeouts    dials cut short by the dial timeout (Keeper only)
//	wardpool_acquire_timeouts_total / wardpool.acquire.timeouts  acquires AcquireTimeout ended (Keeper only)
//	wardpool_stalls_total / wardpool.stalls                  stalls reported by the stall watch (Keeper only)
//	wardpool_class_acquires_total{class} / wardpool.class.acquires  takes of a class that lent or made a resource (Config.Classes)
//	wardpool_class_held_back_total{class} / wardpool.class.held_back  takes of a class the class rule made wait (Config.Classes)
//
// The class series have a sample for each class of a Keeper with
// Config.Classes, labelled class=<its name> (the callers without a class:
// class="(default)"), and none without classes.
//
// A Source with a Limits method (a *wardpool.Keeper and every driver's pool)
// has the max gauges, each only when its limit is set (zero means none);
// one with a Leaked method (the same) has leaked_loans.
//
// With guards shared between replicas (wardpool.Config.Shared), also these
// gauges and counters:
//
//	wardpool_budget_slots_held / wardpool.budget.held        slots of the fleet's budget held now
//	wardpool_budget_slots_share / wardpool.budget.share      this replica's fair share of the budget
//	wardpool_budget_waits_total / wardpool.budget.waits      leases refused while callers waited at the ceiling
//	wardpool_budget_store_outages_total / wardpool.budget.store_outages  outages of the budget's store met
//	wardpool_budget_fallbacks_total / wardpool.budget.fallbacks        leases decided alone, the store silent
//	wardpool_budget_alone / wardpool.budget.alone            1 while the replica keeps its safe share alone
//	wardpool_shared_store_trips_total / wardpool.shared.trips         round trips to the shared store
//	wardpool_shared_store_errors_total / wardpool.shared.store_errors  round trips that failed or timed out
//	wardpool_shared_fallbacks_total / wardpool.shared.fallbacks       decisions made locally, the store silent
//	wardpool_shared_breaker_state / wardpool.shared.breaker.state      0 closed, 1 open, 2 half-open
//	wardpool_shared_breaker_refused_total / wardpool.shared.breaker.refused  dials the shared breaker refused
//
// The README beside this file has the same list with the questions each
// series answers, the names pgxpoolprometheus and database/sql's go_sql_*
// use for the same figures, and how to use the Grafana dashboard
// (dashboard.json) and the Prometheus alert rules (alerts.yml) beside it.
package metrics
