package metrics

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/wardpool/wardpool"
)

// This file is the series of classes of callers (wardpool.Config.Classes,
// Stats.Classes): one sample per class, with a class label, for a pool
// that has classes; none for one that has not.

// classSeries are the per-class series, in the order classValues gives
// their values.
var classSeries = [...]series{
	{prom: "class_held_resources", otel: "class.held", unit: "{resource}", kind: gauge, runtime: true,
		help: "Resources a class of callers holds now: lent to its callers, or being made for them."},
	{prom: "class_waiting_acquires", otel: "class.waiting", unit: "{request}", kind: gauge, runtime: true,
		help: "Callers of a class queued for a resource now."},
	{prom: "class_acquires_total", otel: "class.acquires", unit: "{acquire}", kind: counter, runtime: true,
		help: "Takes of a class that lent an idle resource or started making one."},
	{prom: "class_held_back_total", otel: "class.held_back", unit: "{acquire}", kind: counter, runtime: true,
		help: "Takes of a class the class rule made wait: at its ceiling, or one more would have eaten into another present class's reserve."},
}

// classLabel is the label of the class series.
const classLabel = "class"

// DefaultClassLabel is the class label of the callers without a class
// (the default class) in the class series.
const DefaultClassLabel = "(default)"

// classValues are c's values of the class series.
func classValues(c *wardpool.ClassStats) [len(classSeries)]int64 {
	return [...]int64{int64(c.Held), int64(c.Waiting), int64(c.Taken), int64(c.HeldBack)}
}

// classLabelOf is the class label of the class named name.
func classLabelOf(name string) string {
	if name == "" {
		return DefaultClassLabel
	}
	return name
}

// classDescs are the Prometheus descriptors of the class series.
type classDescs [len(classSeries)]*prometheus.Desc

// collectClasses sends the class series of st, one sample per class and
// series.
func (c *Collector) collectClasses(st *wardpool.Stats, ch chan<- prometheus.Metric) {
	if len(st.Classes) == 0 || c.cls[0] == nil {
		return
	}
	buf := make([]sample, len(st.Classes)*len(classSeries))
	for i := range st.Classes {
		cs := &st.Classes[i]
		name := classLabelOf(cs.Name)
		for j, v := range classValues(cs) {
			s := &buf[i*len(classSeries)+j]
			s.set(c.cls[j], prometheus.MakeLabelPairs(c.cls[j], []string{name}), float64(v), classSeries[j].kind == counter)
			ch <- s
		}
	}
}

// classInstruments are the OpenTelemetry instruments of the class series.
type classInstruments [len(classSeries)]metric.Int64Observable

// newClassInstruments makes the class series' instruments named with
// prefix.
func newClassInstruments(meter metric.Meter, prefix string) (classInstruments, []metric.Observable, error) {
	var ci classInstruments
	var insts []metric.Observable
	for i := range classSeries {
		s := &classSeries[i]
		var err error
		if s.kind == counter {
			ci[i], err = meter.Int64ObservableCounter(prefix+"."+s.otel, metric.WithDescription(s.help), metric.WithUnit(s.unit))
		} else {
			ci[i], err = meter.Int64ObservableUpDownCounter(prefix+"."+s.otel, metric.WithDescription(s.help), metric.WithUnit(s.unit))
		}
		if err != nil {
			return ci, nil, fmt.Errorf("metrics: instrument %s.%s: %w", prefix, s.otel, err)
		}
		insts = append(insts, ci[i])
	}
	return ci, insts, nil
}

// observe observes the class series of st, with the attributes kvs and
// the class's.
func (ci *classInstruments) observe(_ context.Context, obs metric.Observer, st *wardpool.Stats, kvs []attribute.KeyValue) {
	for i := range st.Classes {
		cs := &st.Classes[i]
		set := attribute.NewSet(append(kvs[:len(kvs):len(kvs)], attribute.String(classLabel, classLabelOf(cs.Name)))...)
		for j, v := range classValues(cs) {
			obs.ObserveInt64(ci[j], v, metric.WithAttributeSet(set))
		}
	}
}

// errClassLabel is Observe's error for Options.Labels with a class key.
var errClassLabel = errors.New(`metrics: Options.Labels has "class", the class series' own attribute`)
