//go:build arm64 && !purego

package cpu

// attendSIMD says attend reads the KV pool's fp32 and bf16 rows in place
// (attendDirect) for head sizes of a multiple of 16 (the NEON kernels'
// step; others are widened into copies as before): the scores by gemv
// (dotF32NEON, dotBF16NEON), the weighted sum by wsumRows (axpyNEON,
// axpyBF16NEON), each bit for bit the copy path's dotF32 and axpy. Heads
// are taken one at a time (attendGroup is 0: no fused multi-head kernel
// on NEON yet).
func attendSIMD(D int) bool { return useNEON && D%16 == 0 }
