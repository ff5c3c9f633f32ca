package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/wardpool/wardpool"
)

// Collector is a prometheus.Collector for one pool. Each Collect takes one
// reading from its Source (one lock acquisition for a Keeper) and exports
// every series of it; see the package documentation for the list.
//
// The limits (max_resources, max_idle_resources) are read once, by
// NewCollector: a Keeper's limits never change.
//
// A Collector is safe for concurrent use; register it with
// prometheus.Registerer.Register or MustRegister.
type Collector struct {
	src    Source
	series []series           // in exposition order, retired excluded
	descs  []*prometheus.Desc // by series
	labels [][]*dto.LabelPair // by series: the constant labels
	lim    limited            // the Source's Limits, or nil
	limD   [len(limitSeries)]*prometheus.Desc
	limL   [len(limitSeries)][]*dto.LabelPair
	leaks  leaky            // the Source's Leaked, or nil
	leak   *prometheus.Desc // leaked_loans, when leaks is set
	leakL  []*dto.LabelPair
	ret    *prometheus.Desc // retired_total
	retLab [len(reasons)][]*dto.LabelPair
	rst    *prometheus.Desc // resets_total, for a Source with the runtime's figures
	// rstManual labels resets_total's cause="manual" sample, sent at 0
	// before the first reset.
	rstManual []*dto.LabelPair
	cls       classDescs // the class series (class.go), for a Source with the runtime's figures
}

// NewCollector returns a Collector reading src, naming its series after o
// (and labelling them pool=<src's name> when src has a Name method and
// o.Labels no pool label).
// It panics when o makes a metric or label name prometheus.NewDesc rejects,
// or has a "reason", "cause" or "class" label, which the retired, resets
// and class series have of their own: a mistake in the program, better found at start than
// at the first scrape.
func NewCollector(src Source, o Options) *Collector {
	o = o.forSource(src)
	prefix := o.prefix("_")
	var consts prometheus.Labels
	if len(o.Labels) > 0 {
		consts = make(prometheus.Labels, len(o.Labels))
		for k, v := range o.Labels {
			consts[k] = v
		}
	}
	desc := func(s *series, variable ...string) *prometheus.Desc {
		d := prometheus.NewDesc(prefix+"_"+s.prom, s.help, variable, consts)
		// NewDesc defers its errors to registration and Collect; surface
		// them now, where the mistake was made. NewConstMetric reports
		// the Desc's error, and has none of its own for the right number
		// of label values.
		if _, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, 0, variable...); err != nil {
			panic("metrics: " + err.Error())
		}
		return d
	}
	c := &Collector{src: src, series: chosen(src)}
	c.descs = make([]*prometheus.Desc, len(c.series))
	c.labels = make([][]*dto.LabelPair, len(c.series))
	for i := range c.series {
		c.descs[i] = desc(&c.series[i])
		c.labels[i] = prometheus.MakeLabelPairs(c.descs[i], nil)
	}
	c.ret = desc(&retired, "reason")
	for i, r := range reasons {
		c.retLab[i] = prometheus.MakeLabelPairs(c.ret, []string{r})
	}
	if _, booksOnly := src.(booksSource); !booksOnly {
		c.rst = desc(&resets, causeLabel)
		c.rstManual = prometheus.MakeLabelPairs(c.rst, []string{wardpool.CauseManual})
		for i := range classSeries {
			c.cls[i] = desc(&classSeries[i], classLabel)
		}
	}
	if lk, ok := src.(leaky); ok {
		c.leaks, c.leak = lk, desc(&leaked)
		c.leakL = prometheus.MakeLabelPairs(c.leak, nil)
	}
	if c.lim = limitsOf(src); c.lim != nil {
		for i := range limitSeries {
			c.limD[i] = desc(&limitSeries[i])
			c.limL[i] = prometheus.MakeLabelPairs(c.limD[i], nil)
		}
	}
	return c
}

// Describe sends the descriptors of every series the Collector exports.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	ch <- c.ret
	if c.rst != nil {
		ch <- c.rst
		for _, d := range c.cls {
			ch <- d
		}
	}
	if c.lim != nil {
		for _, d := range c.limD {
			ch <- d
		}
	}
	if c.leak != nil {
		ch <- c.leak
	}
}

// Collect takes one reading from the Source and sends every series of it.
// It allocates one block for all the samples of a scrape.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.WardStats()
	n := len(c.series)
	buf := make([]sample, n+len(reasons)+1+len(limitSeries)+1)
	for i := range c.series {
		s := &c.series[i]
		buf[i].set(c.descs[i], c.labels[i], s.float(s.field.of(&st)), s.kind == counter)
		ch <- &buf[i]
	}
	by := retiredBy(&st)
	for i := range reasons {
		buf[n+i].set(c.ret, c.retLab[i], float64(by[i]), true)
		ch <- &buf[n+i]
	}
	if c.lim != nil {
		lim := buf[n+len(reasons):]
		for i, v := range limitValues(c.lim.Limits()) {
			if v > 0 {
				lim[i].set(c.limD[i], c.limL[i], float64(v), false)
				ch <- &lim[i]
			}
		}
	}
	if c.leaks != nil {
		last := &buf[len(buf)-1]
		last.set(c.leak, c.leakL, float64(c.leaks.Leaked()), false)
		ch <- last
	}
	if c.rst != nil && len(st.ResetCauses) == 0 {
		// cause="manual" at 0 before any reset, in the scrape's one block.
		last := &buf[len(buf)-2]
		last.set(c.rst, c.rstManual, 0, true)
		ch <- last
	} else if causes, counts := causesOf(&st); c.rst != nil {
		rs := make([]sample, len(causes)) // only once a reset happened
		for i, cause := range causes {
			rs[i].set(c.rst, prometheus.MakeLabelPairs(c.rst, []string{cause}), float64(counts[i]), true)
			ch <- &rs[i]
		}
	}
	c.collectClasses(&st, ch) // class.go
}

// sample is one value of one scrape, with the protobuf messages Write hands
// out already built, so that a scrape allocates one block for all its
// samples. A sample is never changed after it is sent: Write only reads it,
// and may be called any number of times, concurrently.
type sample struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair // shared by every scrape; never modified
	value  float64
	gauge  *dto.Gauge   // points at g, or nil
	count  *dto.Counter // points at c, or nil
	g      dto.Gauge
	c      dto.Counter
}

// set fills s, which must not have been sent yet.
func (s *sample) set(d *prometheus.Desc, labels []*dto.LabelPair, v float64, isCounter bool) {
	s.desc, s.labels, s.value = d, labels, v
	if isCounter {
		s.c.Value = &s.value
		s.count = &s.c
	} else {
		s.g.Value = &s.value
		s.gauge = &s.g
	}
}

// Desc returns the sample's descriptor.
func (s *sample) Desc() *prometheus.Desc { return s.desc }

// Write fills m with the sample's labels and value.
func (s *sample) Write(m *dto.Metric) error {
	m.Label = s.labels
	m.Counter = s.count
	m.Gauge = s.gauge
	return nil
}
