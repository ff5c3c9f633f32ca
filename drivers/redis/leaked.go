package redisward

// Leaked returns how many connections are out on loan now and have been
// for longer than Config.LeakAfter; 0 when the leak watch is off. With
// WardStats and Limits it makes a Pool a metrics source as it is (the
// leaked-now gauge). It takes the pool's lock and allocates: it is for
// scrapes, not for every command.
func (p *Pool) Leaked() int {
	if p.leakAfter <= 0 {
		return 0
	}
	n := 0
	for _, l := range p.k.Loans() { // longest first
		if l.Held < p.leakAfter {
			break
		}
		n++
	}
	return n
}
