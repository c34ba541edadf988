// openai-check: llm-serve through the `openai` npm package (the client
// editors and agent frameworks use).  One JSON line per check on stdout;
// tests/llm-serve.bats reads them.
//
//   node tests/tools/openai-check.mjs BASE_URL MODEL [API_KEY]
//
// The package is installed into tests/npm (its package.json lists it) by
// tests/llm-serve.bats when it is not there.
import { createRequire } from 'node:module';
import path from 'node:path';
import url from 'node:url';

const here = path.dirname(url.fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'npm', 'package.json'));
const { default: OpenAI } = await import(require.resolve('openai'));

const [base, model, key] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base, apiKey: key || 'none', maxRetries: 0, timeout: 60000 });
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const messages = [{ role: 'user', content: 'Hello there' }];

const plain = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0 });
out({
	check: 'plain',
	content: plain.choices[0].message.content,
	role: plain.choices[0].message.role,
	finish: plain.choices[0].finish_reason,
	usage: plain.usage,
	object: plain.object,
});

const stream = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0, stream: true });
let text = '', finish = null, chunks = 0;
for await (const c of stream) {
	chunks++;
	text += c.choices[0]?.delta?.content ?? '';
	finish = c.choices[0]?.finish_reason ?? finish;
}
out({ check: 'stream', content: text, finish, chunks });

// a stop string from the middle of the plain reply: the text before it
const t = plain.choices[0].message.content;
const stop = t.slice(Math.floor(t.length / 2), Math.floor(t.length / 2) + 3);
const stopped = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0, stop: [stop] });
out({ check: 'stop', stop, content: stopped.choices[0].message.content, finish: stopped.choices[0].finish_reason,
	want: t.slice(0, t.indexOf(stop)) });
const sstream = await client.chat.completions.create({ model, messages, max_tokens: 12, temperature: 0, stop,
	stream: true });
let stext = '';
for await (const c of sstream)
	stext += c.choices[0]?.delta?.content ?? '';
out({ check: 'stop-stream', content: stext });

const models = await client.models.list();
out({ check: 'models', ids: models.data.map((m) => m.id) });

for (const [name, req] of [
	['unknown-model', { model: 'nosuch', messages }],
	['bad-temperature', { model, messages, temperature: 'hot' }],
	['no-messages', { model, messages: [] }],
]) {
	try {
		await client.chat.completions.create(req);
		out({ check: name, status: 200 });
	} catch (e) {
		out({ check: name, status: e.status, type: e.error?.type, code: e.code ?? null, message: e.message });
	}
}
