//go:build !amd64 || purego

package cpu

// gemm6x8Asm: gemm6x8 is the Go kernel (gemm_other.go).
const gemm6x8Asm = false
