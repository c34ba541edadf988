// openai-tools: tool calls and reasoning through the `openai` npm package,
// as an agent framework makes them: tool_choice "required" and a named
// function, the calls' arguments parsed and held to the tools' schemas,
// the streamed deltas reassembled into the same message, and a round
// trip (the call and its result sent back).  One JSON line per check on
// stdout; tests/llm-serve.bats reads them.
//
//   node tests/tools/openai-tools.mjs BASE_URL MODEL
import { createRequire } from 'node:module';
import path from 'node:path';
import url from 'node:url';

const here = path.dirname(url.fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '..', 'npm', 'package.json'));
const { default: OpenAI } = await import(require.resolve('openai'));

const [base, model] = process.argv.slice(2);
const client = new OpenAI({ baseURL: base, apiKey: 'none', maxRetries: 0, timeout: 120000 });
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');
const tools = [
	{
		type: 'function',
		function: {
			name: 'get_weather',
			description: 'The weather in a city',
			parameters: {
				type: 'object',
				properties: { city: { enum: ['Paris', 'Oslo', 'Lima'] }, days: { type: 'integer' } },
				required: ['city'],
			},
		},
	},
	{
		type: 'function',
		function: {
			name: 'set_alarm',
			parameters: { type: 'object', properties: { hour: { enum: [6, 7, 8] } }, required: ['hour'] },
		},
	},
];
const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
const req = { model, messages, tools, max_tokens: 200, temperature: 0 };
// does a call follow its tool's schema?
const follows = (c) => {
	const a = JSON.parse(c.function.arguments);
	if (c.function.name === 'get_weather')
		return ['Paris', 'Oslo', 'Lima'].includes(a.city) && (a.days === undefined || Number.isInteger(a.days));
	return c.function.name === 'set_alarm' && [6, 7, 8].includes(a.hour);
};

const req1 = await client.chat.completions.create({ ...req, tool_choice: 'required', parallel_tool_calls: false });
const m = req1.choices[0].message;
out({ check: 'required', finish: req1.choices[0].finish_reason, content: m.content, n: m.tool_calls.length,
	follows: m.tool_calls.every(follows), ids: m.tool_calls.map((c) => [c.id.length > 0, c.type]) });

// streamed: the deltas make the same calls
const stream = await client.chat.completions.create({ ...req, tool_choice: 'required', parallel_tool_calls: false,
	stream: true });
const calls = [];
let finish = null, content = '';
for await (const ch of stream) {
	const d = ch.choices[0]?.delta ?? {};
	content += d.content ?? '';
	for (const tc of d.tool_calls ?? []) {
		calls[tc.index] ??= { name: '', arguments: '' };
		calls[tc.index].name += tc.function?.name ?? '';
		calls[tc.index].arguments += tc.function?.arguments ?? '';
	}
	finish = ch.choices[0]?.finish_reason ?? finish;
}
out({ check: 'stream', finish, content,
	same: JSON.stringify(calls) === JSON.stringify(m.tool_calls.map((c) => ({ name: c.function.name,
		arguments: c.function.arguments }))) });

// one function by name
const named = await client.chat.completions.create({ ...req,
	tool_choice: { type: 'function', function: { name: 'set_alarm' } } });
out({ check: 'named', names: named.choices[0].message.tool_calls.map((c) => c.function.name),
	follows: named.choices[0].message.tool_calls.every(follows) });

// the round trip: the call and its result go back; the model answers
const back = await client.chat.completions.create({ model, max_tokens: 8, temperature: 0, tools,
	messages: [...messages, m, { role: 'tool', tool_call_id: m.tool_calls[0].id, content: '{"temp": 21}' }] });
out({ check: 'round-trip', finish: back.choices[0].finish_reason, role: back.choices[0].message.role });

// seeds repeat across interleaved requests
const seeded = (seed) => client.completions.create({ model, prompt: 'Once upon a time', max_tokens: 8, temperature: 1,
	seed }).then((r) => r.choices[0].text);
const a1 = await seeded(7), b1 = await seeded(8), a2 = await seeded(7), b2 = await seeded(8);
out({ check: 'seeds', same: a1 === a2 && b1 === b2, differ: a1 !== b1 });

// logprobs: each a log probability, the top alternative the greedy token
const lp = await client.chat.completions.create({ model, messages, max_tokens: 6, temperature: 0, logprobs: true,
	top_logprobs: 2, reasoning_format: 'none' });
const entries = lp.choices[0].logprobs.content;
out({ check: 'logprobs', n: entries.length,
	plausible: entries.every((e) => e.logprob <= 0 && e.logprob > -30 && e.top_logprobs.length === 2 &&
		e.top_logprobs[0].token === e.token && Math.exp(e.top_logprobs[0].logprob) +
		Math.exp(e.top_logprobs[1].logprob) <= 1 + 1e-9),
	text: entries.map((e) => e.token).join('') === lp.choices[0].message.content });

// embeddings (the client asks for base64 and decodes it)
const emb = await client.embeddings.create({ model, input: ['Hello world', 'Hi'] });
out({ check: 'embeddings', n: emb.data.length, dims: emb.data.map((d) => d.embedding.length),
	norms: emb.data.map((d) => Math.abs(Math.sqrt(d.embedding.reduce((a, x) => a + x * x, 0)) - 1) < 1e-5) });
