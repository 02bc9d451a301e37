package grammar

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func schemaGrammar(t *testing.T, schema string) *Grammar {
	t.Helper()
	g, err := FromJSONSchema([]byte(schema))
	if err != nil {
		src, _ := JSONSchemaGBNF([]byte(schema))
		t.Fatalf("%s: %v\n%s", schema, err, src)
	}
	return g
}

func TestJSONSchema(t *testing.T) {
	for _, c := range []struct {
		schema   string
		ok, fail []string
	}{
		{`{"type":"object","properties":{"name":{"type":"string","maxLength":5},"age":{"type":"integer","minimum":0,"maximum":130},"tags":{"type":"array","items":{"enum":["a","b"]},"minItems":1,"maxItems":2}},"required":["name","age"],"$schema":"http://json-schema.org/draft-07/schema#","title":"P","description":"d","additionalProperties":false}`,
			[]string{`{"name": "Ada", "age": 36}`, `{"name":"","age":0,"tags":["a","b"]}`, "{\n  \"name\": \"x\",\n  \"age\": 130\n}"},
			[]string{`{"age": 36, "name": "Ada"}`, `{"name": "Ada"}`, `{"name": "Ada Lovelace", "age": 36}`, `{"name":"A","age":131}`, `{"name":"A","age":-1}`,
				`{"name":"A","age":1,"tags":[]}`, `{"name":"A","age":1,"tags":["a","b","a"]}`, `{"name":"A","age":1,"x":1}`, `{"name":"A","age":01}`}},
		{`{"type":"object","properties":{"a":{"type":"boolean"},"b":{"type":"null"},"c":{"type":"number"}}}`,
			[]string{`{}`, `{"b": null}`, `{"c": -1.5e3}`, `{"a": true, "c": 2}`, `{"a": false, "b": null, "c": 0}`},
			[]string{`{,"b": null}`, `{"b": null,}`, `{"c": 1, "a": true}`, `{"a": 1}`}},
		{`{"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":true}`,
			// (an extra key may repeat a listed one's name: docs/serve.md says so)
			[]string{`{"a": 1, "z": [1, {"q": null}]}`, `{"z": 1}`, `{}`},
			[]string{`{"a": 1,}`, `{"a" 1}`}},
		{`{"type":"object"}`, []string{`{}`, `{"k": [1, "v"]}`}, []string{`[]`, `1`}},
		{`{"anyOf":[{"type":"string","format":"date"},{"type":"integer","exclusiveMinimum":5,"exclusiveMaximum":8}]}`,
			[]string{`"2024-02-29"`, `6`, `7`}, []string{`5`, `8`, `"2024-13-01"`, `"x"`}},
		{`{"oneOf":[{"const":{"k":[1,"two"]}},{"type":["null","boolean"]}]}`,
			[]string{`{"k":[1,"two"]}`, `null`, `true`}, []string{`{"k": [1, "two"]}`, `1`}},
		{`{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"next":{"anyOf":[{"$ref":"#/$defs/node"},{"type":"null"}]}},"required":["v","next"]}},"$ref":"#/$defs/node"}`,
			[]string{`{"v": 1, "next": {"v": 2, "next": null}}`}, []string{`{"v": 1}`, `{"v": 1, "next": {"v": 2}}`}},
		{`{"definitions":{"id":{"type":"string","format":"uuid"}},"type":"array","items":{"$ref":"#/definitions/id"}}`,
			[]string{`[]`, `["123e4567-e89b-12d3-a456-426614174000"]`}, []string{`["123e4567"]`}},
		{`{"type":"string","format":"date-time"}`, []string{`"2024-01-02T03:04:05Z"`, `"2024-01-02T03:04:05.123+01:00"`}, []string{`"2024-01-02 03:04:05"`}},
		{`{"type":"string","format":"email"}`, []string{`"ada@example.org"`}, []string{`"ada"`, `"@x.y"`}},
		{`{"type":"string","pattern":"^[A-Z][a-z]{1,3}-\\d+$"}`, []string{`"Ab-1"`, `"Abcd-123"`}, []string{`"ab-1"`, `"A-1"`, `"Ab-"`}},
		{`{"type":"string","pattern":"x\"y"}`, []string{`"x\"y"`, `"ax\"yb"`}, []string{`"x"`}},
		{`{"type":"string","minLength":2}`, []string{`"ab"`, `"a\nb"`, `"日本"`}, []string{`"a"`, `""`}},
		{`true`, []string{`1`, `"s"`, `{"a": [null]}`}, nil},
	} {
		g := schemaGrammar(t, c.schema)
		for _, s := range c.ok {
			if whole, _ := matches(t, g, s); !whole {
				src, _ := JSONSchemaGBNF([]byte(c.schema))
				t.Errorf("%s: %s refused\n%s", c.schema, s, src)
			}
		}
		for _, s := range c.fail {
			if whole, _ := matches(t, g, s); whole {
				t.Errorf("%s: %s accepted", c.schema, s)
			}
		}
	}
}

// Integer ranges are exact: every number near and inside the bounds is
// accepted exactly when it lies within them.
func TestIntegerRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := [][2]int64{{0, 0}, {-5, 5}, {7, 7}, {10, 99}, {3, 1234}, {-1000, -17}, {-250, 9999}, {123, 4567}, {0, 100000}}
	for i := 0; i < 20; i++ {
		a, b := rng.Int64N(200000)-100000, rng.Int64N(200000)-100000
		cases = append(cases, [2]int64{min(a, b), max(a, b)})
	}
	for _, c := range cases {
		g := schemaGrammar(t, fmt.Sprintf(`{"type":"integer","minimum":%d,"maximum":%d}`, c[0], c[1]))
		try := func(n int64) {
			if whole, _ := matches(t, g, strconv.FormatInt(n, 10)); whole != (n >= c[0] && n <= c[1]) {
				t.Errorf("[%d, %d]: %d accepted %v", c[0], c[1], n, whole)
			}
		}
		for n := c[0] - 30; n <= c[0]+30; n++ {
			try(n)
		}
		for n := c[1] - 30; n <= c[1]+30; n++ {
			try(n)
		}
		for i := 0; i < 50; i++ {
			try(c[0] + rng.Int64N(c[1]-c[0]+1))
		}
		for _, bad := range []string{"-0", "007", "+1"} {
			if whole, _ := matches(t, g, bad); whole {
				t.Errorf("[%d, %d]: %s accepted", c[0], c[1], bad)
			}
		}
	}
}

func TestJSONSchemaErrors(t *testing.T) {
	for schema, want := range map[string]string{
		`{"type":"object","properties":{"a":{"type":"string","contentEncoding":"base64"}}}`: `"contentEncoding" at /properties/a`,
		`{"type":"array","prefixItems":[{"type":"string"}]}`:                                `"prefixItems"`,
		`{"type":"string","format":"hostname"}`:                                             `"format"`,
		`{"type":"number","minimum":0}`:                                                     `"minimum"`,
		`{"allOf":[{"type":"string"},{"maxLength":3}]}`:                                     `"allOf"`,
		`{"$ref":"#/$defs/missing"}`:                                                        "no such definition",
		`{"$ref":"http://example.com/s.json"}`:                                              `"$ref"`,
		`{"type":"object","properties":{"a":{}},"required":["b"]}`:                          `"required"`,
		`{"type":"integer","minimum":5,"maximum":4}`:                                        "no integer",
		`{"type":"strin"}`:                                                                  `unknown type "strin"`,
		`{"type":"string","pattern":"a\\bb"}`:                                               `"pattern"`,
		`{"type":"array","minItems":3,"maxItems":2}`:                                        `"maxItems"`,
		`{"enum":[]}`: `"enum"`,
		`false`:       "allows no value",
		`{"type":`:    "not JSON",
		`[]`:          "must be an object or a boolean",
	} {
		_, err := FromJSONSchema([]byte(schema))
		var se *SchemaError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a SchemaError with %q", schema, err, want)
		}
	}
}

func TestJSONObject(t *testing.T) {
	g := JSONObject()
	for s, want := range map[string]bool{`{}`: true, `{"a": {"b": [1, 2.5e-3, "x", null, true]}}`: true, `[]`: false, `"s"`: false, `{"a"}`: false} {
		if whole, _ := matches(t, g, s); whole != want {
			t.Errorf("%s: %v", s, whole)
		}
	}
}
