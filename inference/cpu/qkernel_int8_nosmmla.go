//go:build !arm64 || purego

package cpu

// Without arm64's SMMLA tile (qkernel_int8_smmla_arm64.go) the pair
// layout's prefill packs its inputs one way (packPairs) for one tile.

// packPairsTiles packs the prepared inputs for prefill's tile.
func (q *qPrep) packPairsTiles(n, K int) {
	q.smmla = false
	q.packPairs(n, K)
}

// qGemmPairsTile is the tile for the inputs p packs.
func qGemmPairsTile(*qPrep) qGemmPairsFunc { return qGemmPairs }
