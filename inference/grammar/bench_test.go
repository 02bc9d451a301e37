package grammar

import (
	"syscall"
	"testing"
	"time"

	"etchat/internal/fixtures"
)

// benchDoc is a JSON reply of the kind structured output produces: keys,
// short and long strings (one with non-ASCII text), numbers, an array.
const benchDoc = `{"name": "Ada Lovelace", "born": 1815, "score": -12.75e2, "tags": ["math", "poetry", "engines"], ` +
	`"bio": "Wrote the first published algorithm for Babbage's Analytical Engine; called it poetical science. Née Byron.", ` +
	`"active": false, "notes": null}`

// BenchmarkMask is the grammar's cost per generated token: the mask before
// it and the advance by it, over a JSON document written token by token
// with a fresh matcher each time (each generation starts with empty
// caches, so the first visit of every state pays the trie walk), for
// llama3's and gemma3's vocabularies. Compare ns/token with the CPU
// engine's decode step: go test -run '^$' -bench 'Decode$/llama-bench-q4' -cpu 2 ./inference/cpu
func BenchmarkMask(b *testing.B) {
	g, err := Parse(jsonGBNF)
	if err != nil {
		b.Fatal(err)
	}
	for _, f := range families[:2] {
		b.Run(f.name, func(b *testing.B) {
			tk, v := load(b, f.fixture)
			eot, _ := tk.TokenID(f.eot)
			ids := append(tk.Encode(benchDoc, false), eot)
			var worst time.Duration
			walks, fullWalks := 0, 0
			cpu0 := processCPU()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				mt := NewMatcher(g, v, []int{eot})
				for _, id := range ids {
					t := time.Now()
					mt.Mask()
					err := mt.Accept(id)
					worst = max(worst, time.Since(t))
					if err != nil {
						b.Fatal(err)
					}
				}
				for _, st := range mt.m.states {
					if st.tokMask != nil {
						walks++
					}
					if st.mask != nil && st.trunc >= 0 && mt.m.states[st.trunc].tokMask == nil {
						fullWalks++
					}
				}
			}
			cpu := processCPU() - cpu0
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ids)), "ns/token")
			b.ReportMetric(float64(worst.Microseconds()), "worst-µs")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*len(ids)), "cpu-ns/token")
			b.ReportMetric(float64(walks+fullWalks)/float64(b.N), "walks/doc")
			b.ReportMetric(float64(len(ids)), "tokens/doc")
			b.ReportMetric(float64(v.Size()), "vocab")
		})
	}
}

// BenchmarkVocab is the one-time cost of a tokenizer's trie.
func BenchmarkVocab(b *testing.B) {
	tk, _ := load(b, fixtures.Gemma3)
	for i := 0; i < b.N; i++ {
		if _, err := NewVocab(tk); err != nil {
			b.Fatal(err)
		}
	}
}

// processCPU is the process's user+system CPU time: under a loaded machine
// it is steadier than the wall clock.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
