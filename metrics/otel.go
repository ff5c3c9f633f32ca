package metrics

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/wardpool/wardpool"
)

// Observe creates an observable instrument on meter for every figure of
// src and registers one callback for all of them that takes one reading
// from src per collection.
//
// What OpenTelemetry's semantic conventions for database client pools name
// is emitted under the conventions' names, units, kinds and attributes
// (semconv v1.43.0's dbconv package), each measurement carrying
// db.client.connection.pool.name:
//
//   - db.client.connection.count, {connection}, an UpDownCounter, with
//     db.client.connection.state idle (Stats.Idle) and used (Stats.Busy:
//     lent or being made);
//   - db.client.connection.max (Limits.Size) and
//     db.client.connection.idle.max (Limits.Idle, or Size when Idle is 0),
//     when src has a Limits method and the limit is set;
//   - db.client.connection.idle.min, when src has a MinIdle method (every
//     driver's pool; a bare Keeper has none) and it is set;
//   - db.client.connection.pending_requests (Stats.Waiting), {request};
//   - db.client.connection.timeouts (Stats.Canceled: acquires whose
//     context ended first), {timeout}, a Counter.
//
// The conventions' histograms (create_time, wait_time, use_time) need one
// measurement per dial, acquire and loan, which a reading of Stats cannot
// give: NewTimings makes them, for the callers that time those events.
//
// Everything the conventions have no name for (dials and their failures,
// loans, retirements, the ward's sheds and breaker, resets, the fleet's
// budget, leaks, …) stays under wardpool.*: named after o with "." between
// the parts (wardpool.made, wardpool.breaker.refusal, …; see the package
// documentation). Gauges become Int64ObservableUpDownCounters
// (breaker.refusal, a fraction, a Float64ObservableGauge), counters
// Int64ObservableCounters, and acquire.wait, in seconds, a
// Float64ObservableCounter. o.Labels become attributes of every
// measurement (with pool=<src's name> when src has a Name method and
// o.Labels no pool label; on the conventions' instruments the pool label
// is db.client.connection.pool.name, "wardpool" when there is none);
// retired also carries a reason attribute (idle, life, other), and
// resets, once the pool was reset, a cause attribute.
//
// Unregister the returned Registration to stop observing, for example when
// the pool is closed. Observe fails, registering no callback, when o.Labels
// has a reason or cause key (retired's and resets' own) or meter refuses an
// instrument or the callback.
func Observe(meter metric.Meter, src Source, o Options) (metric.Registration, error) {
	o = o.forSource(src)
	if _, ok := o.Labels["reason"]; ok {
		return nil, errors.New(`metrics: Options.Labels has "reason", the retired series' own attribute`)
	}
	if _, ok := o.Labels[causeLabel]; ok {
		return nil, errors.New(`metrics: Options.Labels has "cause", the resets series' own attribute`)
	}
	if _, ok := o.Labels[classLabel]; ok {
		return nil, errClassLabel
	}
	prefix := o.prefix(".")
	keys := o.labelKeys()
	kvs := make([]attribute.KeyValue, 0, len(keys)+1)
	for _, k := range keys {
		kvs = append(kvs, attribute.String(k, o.Labels[k]))
	}
	base := []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(kvs...))}
	var byReason [len(reasons)][]metric.ObserveOption
	for i, r := range reasons {
		set := attribute.NewSet(append(kvs[:len(kvs):len(kvs)], attribute.String("reason", r))...)
		byReason[i] = []metric.ObserveOption{metric.WithAttributeSet(set)}
	}

	list := otelChosen(src)
	lsrc := limitsOf(src)
	insts := make([]metric.Observable, 0, len(list)+8)
	ints := make([]metric.Int64Observable, len(list)) // nil for float series
	floats := make([]metric.Float64Observable, len(list))
	wrap := func(s *series, err error) error {
		return fmt.Errorf("metrics: instrument %s.%s: %w", prefix, s.otel, err)
	}
	for i := range list {
		s := &list[i]
		name, desc, unit := prefix+"."+s.otel, metric.WithDescription(s.help), metric.WithUnit(s.unit)
		var err error
		switch {
		case s.seconds:
			floats[i], err = meter.Float64ObservableCounter(name, desc, unit)
			insts = append(insts, floats[i])
		case s.ratio:
			floats[i], err = meter.Float64ObservableGauge(name, desc, unit)
			insts = append(insts, floats[i])
		case s.kind == counter:
			ints[i], err = meter.Int64ObservableCounter(name, desc, unit)
			insts = append(insts, ints[i])
		default:
			ints[i], err = meter.Int64ObservableUpDownCounter(name, desc, unit)
			insts = append(insts, ints[i])
		}
		if err != nil {
			return nil, wrap(s, err)
		}
	}
	ret, err := meter.Int64ObservableCounter(prefix+"."+retired.otel,
		metric.WithDescription(retired.help), metric.WithUnit(retired.unit))
	if err != nil {
		return nil, wrap(&retired, err)
	}
	insts = append(insts, ret)
	conv, err := newConvInstruments(meter, src, o)
	if err != nil {
		return nil, err
	}
	insts = append(insts, conv.insts...)

	var rst metric.Int64Observable
	if _, booksOnly := src.(booksSource); !booksOnly {
		rst, err = meter.Int64ObservableCounter(prefix+"."+resets.otel,
			metric.WithDescription(resets.help), metric.WithUnit(resets.unit))
		if err != nil {
			return nil, wrap(&resets, err)
		}
		insts = append(insts, rst)
	}
	var cls *classInstruments
	if rst != nil {
		ci, is, err := newClassInstruments(meter, prefix)
		if err != nil {
			return nil, err
		}
		cls = &ci
		insts = append(insts, is...)
	}

	manual := []metric.ObserveOption{metric.WithAttributeSet(attribute.NewSet(append(kvs[:len(kvs):len(kvs)], attribute.String(causeLabel, wardpool.CauseManual))...))}

	lk, _ := src.(leaky)
	var leakInst metric.Int64Observable
	if lk != nil {
		leakInst, err = meter.Int64ObservableUpDownCounter(prefix+"."+leaked.otel,
			metric.WithDescription(leaked.help), metric.WithUnit(leaked.unit))
		if err != nil {
			return nil, wrap(&leaked, err)
		}
		insts = append(insts, leakInst)
	}

	callback := func(ctx context.Context, obs metric.Observer) error {
		st := src.WardStats()
		for i := range list {
			s := &list[i]
			v := s.field.of(&st)
			if floats[i] != nil {
				obs.ObserveFloat64(floats[i], s.float(v), base...)
			} else {
				obs.ObserveInt64(ints[i], v, base...)
			}
		}
		by := retiredBy(&st)
		for i := range reasons {
			obs.ObserveInt64(ret, by[i], byReason[i]...)
		}
		conv.observe(obs, &st, lsrc)
		if lk != nil {
			obs.ObserveInt64(leakInst, int64(lk.Leaked()), base...)
		}
		if rst != nil && len(st.ResetCauses) == 0 {
			// cause="manual" at 0 before any reset; no allocation.
			obs.ObserveInt64(rst, 0, manual...)
		} else if causes, counts := causesOf(&st); rst != nil {
			for i, cause := range causes {
				set := attribute.NewSet(append(kvs[:len(kvs):len(kvs)], attribute.String(causeLabel, cause))...)
				obs.ObserveInt64(rst, counts[i], metric.WithAttributeSet(set))
			}
		}
		if cls != nil {
			cls.observe(ctx, obs, &st, kvs)
		}
		return nil
	}
	reg, err := meter.RegisterCallback(callback, insts...)
	if err != nil {
		return nil, fmt.Errorf("metrics: register callback: %w", err)
	}
	return reg, nil
}
