package serve

import (
	"etchat/inference"
)

// logprobsDoc is a choice's logprobs field for toks, as OpenAI writes it:
// for chat {"content": [{token, logprob, bytes, top_logprobs}], "refusal":
// null}; for completions the legacy {tokens, token_logprobs,
// top_logprobs, text_offset}. nil (null) when they were not asked for.
// The values are the raw logits' log-softmax (inference.Options.Logprobs),
// as OpenAI and vLLM report them, whatever the temperature.
func (e *entry) logprobsDoc(req *request, c *choice, toks []inference.Token) any {
	if !req.Logprobs {
		return nil
	}
	if req.IsChat {
		content := make([]any, 0, len(toks))
		for _, t := range toks {
			top := make([]any, 0, len(t.TopLogprobs))
			for _, a := range t.TopLogprobs {
				text := e.tokenText(a.ID)
				top = append(top, map[string]any{"token": text, "logprob": a.Logprob, "bytes": byteList(text)})
			}
			text := e.tokenText(t.ID)
			content = append(content, map[string]any{"token": text, "logprob": t.Logprob, "bytes": byteList(text), "top_logprobs": top})
		}
		return map[string]any{"content": content, "refusal": nil}
	}
	tokens, lps, tops, offsets := []string{}, []float64{}, []any{}, []int{}
	off := c.offset
	for _, t := range toks {
		text := e.tokenText(t.ID)
		tokens, lps, offsets = append(tokens, text), append(lps, t.Logprob), append(offsets, off)
		off += len(text)
		top := map[string]float64{}
		for _, a := range t.TopLogprobs {
			top[e.tokenText(a.ID)] = a.Logprob
		}
		tops = append(tops, top)
	}
	return map[string]any{"tokens": tokens, "token_logprobs": lps, "top_logprobs": tops, "text_offset": offsets}
}

// tokenText is one token's text as the tokenizer decodes it alone
// (special tokens kept).
func (e *entry) tokenText(id int) string {
	return e.prep.Chat.Tokenizer.Decode([]int{id}, false)
}

// byteList is text's UTF-8 bytes as the JSON array OpenAI sends. A token
// that is part of a character decodes to U+FFFD alone, and so do its
// bytes here.
func byteList(text string) []int {
	out := make([]int, len(text))
	for i := range len(text) {
		out[i] = int(text[i])
	}
	return out
}
