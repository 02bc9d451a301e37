// Drives etchat serve with the official openai package: list models, chat
// (plain and streaming) and a text completion at temperature 0, whose ids
// must be the engine's own (given by the Go test from `etchat run --json`),
// a json_schema response_format whose reply must parse and match, and the
// server's errors as the client's typed errors. Run by
// `go test ./cli -run OpenAIClient`, which starts the server and sets:
//   ETCHAT_BASE_URL  http://127.0.0.1:PORT/v1
//   ETCHAT_API_KEY   the server's key
//   ETCHAT_EXPECT    {"model", "prompt", "max_tokens", "ids", "text"}
// Prints one JSON line of what it saw; exits 1 on a failed check.
import OpenAI from 'openai';
import assert from 'node:assert/strict';

const baseURL = process.env.ETCHAT_BASE_URL;
const want = JSON.parse(process.env.ETCHAT_EXPECT);
// No retries: a 429 or 5xx must show as such, not be retried away.
const client = new OpenAI({ baseURL, apiKey: process.env.ETCHAT_API_KEY, maxRetries: 0, timeout: 60_000 });
const seen = {};

async function expectError(cls, status, fn, check = () => {}) {
  try {
    await fn();
  } catch (e) {
    assert.ok(e instanceof cls, `want ${cls.name}, got ${e?.constructor?.name}: ${e?.message}`);
    assert.equal(e.status, status);
    check(e);
    return e;
  }
  assert.fail(`want ${cls.name}, the call succeeded`);
}

const models = await client.models.list();
seen.models = models.data.map((m) => m.id);
assert.ok(seen.models.includes(want.model), `models ${seen.models}`);

// docs/serve.md's other way: a client configured by OPENAI_BASE_URL and
// OPENAI_API_KEY alone.
process.env.OPENAI_BASE_URL = baseURL;
process.env.OPENAI_API_KEY = process.env.ETCHAT_API_KEY;
const fromEnv = await new OpenAI({ maxRetries: 0 }).models.list();
assert.ok(fromEnv.data.some((m) => m.id === want.model), 'a client from OPENAI_BASE_URL does not list the model');

const messages = [{ role: 'user', content: want.prompt }];
const chat = await client.chat.completions.create({
  model: want.model, messages, max_tokens: want.max_tokens, temperature: 0, return_token_ids: true,
});
seen.chat_ids = chat.choices[0].token_ids;
seen.chat_text = chat.choices[0].message.content;
assert.deepEqual(seen.chat_ids, want.ids);
assert.equal(seen.chat_text, want.text);
assert.equal(chat.choices[0].finish_reason, 'length');
assert.equal(chat.usage.completion_tokens, want.max_tokens);

let text = '';
let finish = null;
let usage = null;
const stream = await client.chat.completions.create({
  model: want.model, messages, max_tokens: want.max_tokens, temperature: 0, stream: true,
  stream_options: { include_usage: true },
});
for await (const chunk of stream) {
  if (chunk.usage) usage = chunk.usage;
  const c = chunk.choices[0];
  if (!c) continue;
  text += c.delta?.content ?? '';
  if (c.finish_reason) finish = c.finish_reason;
}
seen.stream_text = text;
assert.equal(text, want.text);
assert.equal(finish, 'length');
assert.equal(usage.completion_tokens, want.max_tokens);
// The stream resent the same prompt: all of it but the last token was cached.
assert.equal(usage.prompt_tokens_details.cached_tokens, usage.prompt_tokens - 1);

// Two choices with the logprobs the client's types read.
const two = await client.chat.completions.create({
  model: want.model, messages, max_tokens: want.max_tokens, temperature: 0, n: 2, logprobs: true, top_logprobs: 2,
});
assert.equal(two.choices.length, 2);
for (const [i, c] of two.choices.entries()) {
  assert.equal(c.index, i);
  assert.equal(c.message.content, want.text);
  assert.equal(c.logprobs.content.length, want.max_tokens);
  assert.equal(c.logprobs.content.map((t) => t.token).join(''), want.text);
  assert.equal(c.logprobs.content[0].top_logprobs.length, 2);
  assert.ok(c.logprobs.content[0].logprob <= 0);
}
assert.equal(two.usage.completion_tokens, 2 * want.max_tokens);
seen.logprobs = two.choices[0].logprobs.content.map((t) => t.logprob);

const completion = await client.completions.create({ model: want.model, prompt: want.prompt, max_tokens: 4, temperature: 0 });
seen.completion_text = completion.choices[0].text;
assert.equal(typeof seen.completion_text, 'string');

await expectError(OpenAI.NotFoundError, 404, () =>
  client.chat.completions.create({ model: 'no-such-model', messages }), (e) => assert.equal(e.code, 'model_not_found'));
await expectError(OpenAI.BadRequestError, 400, () =>
  client.chat.completions.create({ model: want.model, messages, n: 0 }), (e) => assert.equal(e.param, 'n'));
await expectError(OpenAI.BadRequestError, 400, () =>
  client.chat.completions.create({ model: want.model, messages, max_tokens: 0 }),
(e) => { assert.equal(e.param, 'max_tokens'); assert.equal(e.code, 'integer_below_min_value'); });
await expectError(OpenAI.BadRequestError, 400, () =>
  client.chat.completions.create({ model: want.model, messages: [{ role: 'user', content: 'word '.repeat(400) }] }),
(e) => assert.equal(e.code, 'context_length_exceeded'));
// Structured output: the fixture's weights are random, so only the grammar
// can make the reply parse and match the schema.
const person = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 10 }, age: { type: 'integer', minimum: 0, maximum: 120 }, admin: { type: 'boolean' } },
  required: ['name', 'age', 'admin'], additionalProperties: false,
};
const structured = await client.chat.completions.create({
  model: want.model, messages, max_tokens: 120, temperature: 0,
  response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: person } },
});
assert.equal(structured.choices[0].finish_reason, 'stop');
const p = JSON.parse(structured.choices[0].message.content);
assert.deepEqual(Object.keys(p).sort(), ['admin', 'age', 'name']);
assert.ok(typeof p.name === 'string' && [...p.name].length <= 10, `name ${p.name}`);
assert.ok(Number.isInteger(p.age) && p.age >= 0 && p.age <= 120, `age ${p.age}`);
assert.equal(typeof p.admin, 'boolean');
seen.structured = p;
await expectError(OpenAI.BadRequestError, 400, () =>
  client.chat.completions.create({ model: want.model, messages,
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', contentEncoding: 'base64' } } } }),
(e) => { assert.equal(e.param, 'response_format.json_schema.schema'); assert.match(e.message, /contentEncoding/); });

const stranger = new OpenAI({ baseURL, apiKey: 'not-the-key', maxRetries: 0 });
await expectError(OpenAI.AuthenticationError, 401, () => stranger.models.list());
seen.errors = 'typed';

console.log(JSON.stringify(seen));
