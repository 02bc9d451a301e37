// An agent loop through etchat serve with the official openai package's
// client.chat.completions.runTools, on a random-weight fixture with a
// short tool template (testdata/templates): qwen3 with Hermes
// <tool_call> blocks, or llama3 with Llama 3.x JSON calls — the client
// sees the same OpenAI tool_calls from both (go test runs it on each). A named
// tool_choice makes the model call get_weather (only the server's grammar
// can make these weights write a valid call), the client runs the
// function and sends its result back as a role "tool" message; a second
// request on those messages with tool_choice "auto" gets the model's text.
// The same first step streamed assembles the call from delta.tool_calls.
// Run by `go test ./cli -run ServeRunTools`, which sets ETCHAT_BASE_URL,
// ETCHAT_API_KEY (the one model served is the one used). Prints one JSON line; exits 1 on a
// failed check.
import OpenAI from 'openai';
import assert from 'node:assert/strict';

const client = new OpenAI({ baseURL: process.env.ETCHAT_BASE_URL, apiKey: process.env.ETCHAT_API_KEY, maxRetries: 0, timeout: 60_000 });
const model = (await client.models.list()).data[0].id; // the one model served
const seen = { calls: [] };

const getWeather = {
  type: 'function',
  function: {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 6 } }, required: ['city'], additionalProperties: false },
    parse: JSON.parse,
    function: ({ city }) => {
      assert.equal(typeof city, 'string');
      assert.ok([...city].length <= 6, `city ${city}`);
      seen.calls.push(city);
      return { city, sky: 'sunny' };
    },
  },
};
const messages = [{ role: 'user', content: 'Weather in Oslo?' }];

for (const stream of [false, true]) {
  const runner = client.chat.completions.runTools({
    model, messages, tools: [getWeather], max_tokens: 60, temperature: 0, stream,
    tool_choice: { type: 'function', function: { name: 'get_weather' } },
  });
  await runner.done();
  const msgs = runner.messages;
  assert.equal(msgs.length, 3, JSON.stringify(msgs));
  assert.equal(msgs[1].role, 'assistant');
  assert.equal(msgs[1].tool_calls.length, 1);
  assert.equal(msgs[1].tool_calls[0].function.name, 'get_weather');
  assert.equal(msgs[2].role, 'tool');
  assert.equal(msgs[2].tool_call_id, msgs[1].tool_calls[0].id);
  seen[stream ? 'streamed' : 'plain'] = msgs[1].tool_calls[0].function.arguments;
  if (stream) break;

  // The conversation goes on with the tool's result (tool_choice auto;
  // these weights answer in text). A plain create: runTools would refuse
  // the random reply's finish_reason length (LengthFinishReasonError).
  const last = await client.chat.completions.create({ model, messages: msgs, tools: [{ type: 'function', function: { name: 'get_weather', parameters: getWeather.function.parameters } }], max_tokens: 10, temperature: 0 });
  const content = last.choices[0].message.content;
  assert.equal(typeof content, 'string');
  assert.ok(last.usage.prompt_tokens > 40, `the tool's result was not rendered: ${last.usage.prompt_tokens} prompt tokens`);
  assert.notEqual(last.choices[0].finish_reason, 'tool_calls');
  seen.final = content;
}
assert.equal(seen.calls.length, 2);
console.log(JSON.stringify(seen));
