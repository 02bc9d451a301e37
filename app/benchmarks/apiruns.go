package benchmarks

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// apiRows are the requests etchat serve (or the app's Serve switch)
// answered, as history rows beside the benchmarks: the test is the
// endpoint with the prompt tokens it found cached, t/s the decode rate,
// one repetition. They have no benchmark result, so the trend chart and
// the comparison leave them out.
func apiRows(ctx context.Context, src Runs) ([]Row, error) {
	runs, err := src.APIRuns(ctx, 2000)
	if err != nil {
		return nil, err
	}
	rows := make([]Row, 0, len(runs))
	for _, r := range runs {
		var c struct {
			Endpoint string `json:"endpoint"`
			Cached   int    `json:"cached_tokens"`
		}
		_ = json.Unmarshal(r.Config, &c) // a run without them still shows its numbers
		test := fmt.Sprintf("api %s, %d cached", strings.TrimPrefix(c.Endpoint, "/v1/"), c.Cached)
		rows = append(rows, Row{RunID: r.ID, Started: r.Started, Model: r.ModelName, Engine: r.Engine, Test: test, Cache: "-",
			AvgTS: r.DecodeTokS, TTFTMs: r.TTFTMs, Reps: 1})
	}
	return rows, nil
}
