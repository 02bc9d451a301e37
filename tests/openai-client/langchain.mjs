// Drives etchat serve with LangChain.js: ChatOpenAI's withStructuredOutput
// (method jsonSchema, strict) on the random-weight fixture, whose reply
// only the server's grammar can make parse and match the schema. Run by
// `go test ./cli -run LangChain`, which starts the server and sets
// ETCHAT_BASE_URL, ETCHAT_API_KEY and ETCHAT_MODEL. Prints one JSON line of
// what it got; exits 1 on a failed check.
import { ChatOpenAI } from '@langchain/openai';
import assert from 'node:assert/strict';

const llm = new ChatOpenAI({
  model: process.env.ETCHAT_MODEL, apiKey: process.env.ETCHAT_API_KEY,
  configuration: { baseURL: process.env.ETCHAT_BASE_URL }, temperature: 0, maxTokens: 120, maxRetries: 0,
});
const person = {
  title: 'person', description: 'A person', type: 'object',
  properties: { name: { type: 'string', maxLength: 10 }, age: { type: 'integer', minimum: 0, maximum: 120 }, admin: { type: 'boolean' } },
  required: ['name', 'age', 'admin'], additionalProperties: false,
};
const structured = llm.withStructuredOutput(person, { method: 'jsonSchema', strict: true });
const p = await structured.invoke([{ role: 'user', content: 'Who are you?' }]);
assert.deepEqual(Object.keys(p).sort(), ['admin', 'age', 'name']);
assert.ok(typeof p.name === 'string' && [...p.name].length <= 10, `name ${p.name}`);
assert.ok(Number.isInteger(p.age) && p.age >= 0 && p.age <= 120, `age ${p.age}`);
assert.equal(typeof p.admin, 'boolean');
console.log(JSON.stringify({ person: p }));
