//go:build amd64 && !purego

package cpu

// gemm6x8Asm: gemm6x8 is the AVX-512 assembly kernel (gemm_amd64.go).
const gemm6x8Asm = true
