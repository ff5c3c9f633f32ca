package ward

import "math"

// belowOne is the largest float64 under 1, what a draw at or over 1 becomes.
var belowOne = math.Nextafter(1, 0)

// draw holds a caller's random draw to [0, 1): NaN and negatives become 0,
// anything at or over 1 becomes the largest value below 1.
func draw(r float64) float64 {
	switch {
	case !(r > 0): // NaN, zero and negatives
		return 0
	case r >= 1:
		return belowOne
	}
	return r
}

// thousandths holds a CPU reading to 0..1000.
func thousandths(cpu int) int {
	return min(max(cpu, 0), 1000)
}

// finite reports whether f is neither NaN nor infinite.
func finite(f float64) bool {
	return !math.IsNaN(f) && !math.IsInf(f, 0)
}

// floorDiv and floorMod divide rounding towards minus infinity, so that a
// negative Unix time still falls in the window that contains it. d > 0.
func floorDiv(n, d int64) int64 {
	q := n / d
	if n%d < 0 {
		q--
	}
	return q
}

func floorMod(n, d int64) int64 {
	m := n % d
	if m < 0 {
		m += d
	}
	return m
}
