package pool

import (
	"testing"

	"github.com/wardpool/wardpool/ward"
)

// TestRoomIsTheSameWhoeverLooked: a full backend's room after a make
// lands depends on the instants of the refusal and of the landing alone,
// not on whether a Take looked at the room in between. Two pools see the
// same refusal (two lent, two makes in flight, one refused at t = 0: room
// 2) and the same landing at 1.5 s; only the second is asked at 1.2 s,
// when the room has grown to 3 and it answers Wait. Both must then answer
// Wait at 1.6 s (the room is 3, three are live) and Make at 2 s (one more
// a second). A raise applied before the growth due at 1 s, as the room
// once was, let the pool nobody asked make a fourth at 1.6 s: the
// linearizability check's full class (TestKeeperLinearizableFull)
// refused about one history in 7,000 for it.
func TestRoomIsTheSameWhoeverLooked(t *testing.T) {
	var got [2][]Kind
	for looked := range 2 {
		p := mustNew(t, Limits{Size: 10})
		for n := 1; n <= 2; n++ {
			if k := p.Take(at(0), 0, 0).Kind; k != Make {
				t.Fatalf("take %d: %v", n, k)
			}
			if !p.Made(&conn{n}, 0, at(0), 0) {
				t.Fatalf("made %d refused", n)
			}
		}
		for range 2 {
			if k := p.Take(at(0), 0, 0).Kind; k != Make {
				t.Fatalf("take: %v", k)
			}
		}
		if !p.Unmade(at(0), 0, ward.GuardFull) {
			t.Fatal("a full refusal with others live: the caller should wait")
		}
		if looked == 1 {
			tk := p.Take(at(1200), 0, 0)
			if tk.Kind != Wait || tk.Guard != ward.GuardFull {
				t.Fatalf("at 1.2 s, three live, room 3: %v %v", tk.Kind, tk.Guard)
			}
		}
		if !p.Made(&conn{3}, 0, at(1500), 0) {
			t.Fatal("the make in flight refused")
		}
		got[looked] = append(got[looked], p.Take(at(1600), 0, 0).Kind, p.Take(at(2000), 0, 0).Kind)
	}
	want := []Kind{Wait, Make}
	for looked, g := range got {
		if len(g) != 2 || g[0] != want[0] || g[1] != want[1] {
			t.Errorf("asked at 1.2 s: %v; at 1.6 s and 2 s it answered %v, want %v", looked == 1, g, want)
		}
	}
}
