package realsize

import (
	"fmt"
	"strings"

	"etchat/inference/mlxgraph"
	"etchat/inference/pte"
)

// Census is what a real-size program is made of, the facts the device export
// was checked by (issue 28: 716 instructions, 113 4-bit g32 quantized matmuls,
// the tied embedding stored once, 16 caches).
type Census struct {
	// Instructions counts every chain's; MainInstructions the chain each
	// forward step runs, InitInstructions the one run once at load (in a
	// quantized export it computes the affine biases from the scales).
	Instructions     int `json:"instructions"`
	MainInstructions int `json:"main_instructions"`
	InitInstructions int `json:"init_instructions"`
	// Histogram is over all chains.
	Histogram map[string]int `json:"histogram"`
	// QuantMatmuls counts QuantizedMatmulNodes by "mode/bits/gGROUP".
	QuantMatmuls map[string]int `json:"quant_matmuls"`
	// TiedEmbedding: the embedding's gathered weight and some quantized
	// matmul's weight are one stored segment.
	TiedEmbedding bool `json:"tied_embedding"`
	// EmbeddingSegments is how many segments hold a key naming embed_tokens
	// (a 4-bit embedding: packed words, scales, and the biases placeholder
	// it may share); LMHeadKeys how many keys name lm_head (0: the head is
	// the embedding, stored once).
	EmbeddingSegments int   `json:"embedding_segments"`
	LMHeadKeys        int   `json:"lm_head_keys"`
	NCaches           int64 `json:"n_caches"`
	// Caches' per-layer heads, head dims and windows (0: full attention).
	KVHeads     []int64 `json:"kv_heads"`
	HeadDims    []int64 `json:"head_dims"`
	Windows     []int64 `json:"windows"`
	Segments    int     `json:"segments"`
	WeightBytes int64   `json:"weight_bytes"`
}

// TakeCensus reads f's program and MLX graph (never its weights, so a
// skeleton serves as well as the real file).
func TakeCensus(f *pte.File) (*Census, error) {
	g, err := graphOf(f)
	if err != nil {
		return nil, err
	}
	c := &Census{Histogram: g.Histogram(), QuantMatmuls: map[string]int{}, MainInstructions: len(g.Instructions),
		Segments: len(f.Segments), WeightBytes: f.WeightBytes()}
	for _, ch := range g.Chains {
		c.Instructions += len(ch)
	}
	if g.InitChain >= 0 && g.InitChain < len(g.Chains) {
		c.InitInstructions = len(g.Chains[g.InitChain])
	}
	c.countMatmuls(g, slotSegments(f, g))
	c.countEmbeddingKeys(f)
	if err := c.readCaches(f); err != nil {
		return nil, err
	}
	return c, nil
}

// slotSegments maps each named tensor slot to the segment its data is in.
func slotSegments(f *pte.File, g *mlxgraph.Graph) map[int]int {
	seg := map[string]int{}
	for _, nd := range f.NamedData {
		seg[nd.Key] = nd.Segment
	}
	segOf := map[int]int{} // tensor slot → segment
	for _, ns := range g.NamedSlots {
		if s, ok := seg[ns.Name]; ok && ns.Slot.IsTensor() {
			segOf[ns.Slot.Idx] = s
		}
	}
	return segOf
}

// countMatmuls counts the quantized matmuls by format and finds whether a
// segment gathered from (the embedding) is also multiplied by (the head).
func (c *Census) countMatmuls(g *mlxgraph.Graph, segOf map[int]int) {
	taken := map[int]bool{}  // segments gathered from (embedding rows)
	matmul := map[int]bool{} // segments multiplied by
	for _, in := range g.Instructions {
		switch n := in.Op.(type) {
		case *mlxgraph.QuantizedMatmulNode:
			c.QuantMatmuls[fmt.Sprintf("%s/%d/g%d", n.Mode, n.Bits, n.GroupSize)]++
			if s, ok := segOf[int(n.W)]; ok {
				matmul[s] = true
			}
		case *mlxgraph.TakeNode:
			if s, ok := segOf[int(n.X)]; ok {
				taken[s] = true
			}
		}
	}
	for s := range taken {
		c.TiedEmbedding = c.TiedEmbedding || matmul[s]
	}
}

// countEmbeddingKeys counts the segments of embed_tokens keys and the
// lm_head keys.
func (c *Census) countEmbeddingKeys(f *pte.File) {
	embed := map[int]bool{}
	for _, nd := range f.NamedData {
		if strings.Contains(nd.Key, "embed_tokens") {
			embed[nd.Segment] = true
		}
		if strings.Contains(nd.Key, "lm_head") {
			c.LMHeadKeys++
		}
	}
	c.EmbeddingSegments = len(embed)
}

// readCaches reads the program's cache constants.
func (c *Census) readCaches(f *pte.File) error {
	v, err := f.Constant("get_n_caches")
	if err != nil {
		return err
	}
	if c.NCaches, err = v.Int(); err != nil {
		return err
	}
	for name, dst := range map[string]*[]int64{"get_kv_heads": &c.KVHeads, "get_head_dims": &c.HeadDims, "get_windows": &c.Windows} {
		v, err := f.Constant(name)
		if err != nil {
			return err
		}
		if *dst, err = v.Ints(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}
