package measure

import "slices"

// Quantile returns the q-quantile of v, 0 ≤ q ≤ 1, by linear interpolation
// between the two samples whose ranks are nearest: with v sorted and
// p = q·(len(v)-1), it is v[⌊p⌋] + (p-⌊p⌋)·(v[⌊p⌋+1] - v[⌊p⌋]) (Hyndman
// and Fan's type 7, the default of R and NumPy). Quantile(v, 0) is the
// smallest sample, Quantile(v, 1) the largest, and Quantile(v, 0.5) the
// median: the middle sample, or the mean of the two middle ones. It is 0
// when v is empty. v need not be sorted and is left as it is; a NaN sorts
// below every number, so leave NaNs out.
//
// Every figure read off samples here (RTT percentiles, idle RTTs, medians
// over rounds) goes through Quantile; pkg/qdisc's HistogramSnapshot.Quantile,
// which reads a histogram's buckets rather than samples, is the only other.
func Quantile[T ~int64 | ~float64](v []T, q float64) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return sortedQuantile(s, q)
}

// sortedQuantile is Quantile of s, sorted and not empty.
func sortedQuantile[T ~int64 | ~float64](s []T, q float64) T {
	p := min(max(q, 0), 1) * float64(len(s)-1)
	i := int(p)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + T((p-float64(i))*float64(s[i+1]-s[i]))
}

// Median returns the median of v (Quantile(v, 0.5): for an even count, the
// mean of the two middle values) and its range: the smallest and largest
// value. All three are 0 when v is empty.
func Median(v []float64) (med, lo, hi float64) {
	if len(v) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return sortedQuantile(s, 0.5), s[0], s[len(s)-1]
}

// MedianOf is Median of f over rs: a figure's median over rounds, and its
// range.
func MedianOf[R any](rs []R, f func(R) float64) (med, lo, hi float64) {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	return Median(v)
}
