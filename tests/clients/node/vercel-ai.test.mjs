// The Vercel AI SDK (`ai` + `@ai-sdk/openai`) against agentd: `createOpenAI({baseURL})` and
// `openai.responses(model)`; a multi-step tool round trip (`generateText` with `stopWhen`),
// streaming (`streamText`: tool input deltas and text deltas), structured output
// (`Output.object`: `text.format`), and a multi-turn conversation.
//
// The SDK's default `store: true` makes it send earlier assistant text back as
// `{"type": "item_reference", "id": "msg_…"}`, which agentd does not resolve yet: the tests that
// send history here set `store: false`, so the SDK replays the items instead.
// pending_item_reference.test.mjs holds the store: true flow (not run until item_reference lands).

import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';

import { createOpenAI } from '@ai-sdk/openai';
import { Output, generateText, isStepCount, streamText, tool } from 'ai';
import { z } from 'zod';

import {
  API_KEY,
  CALL_ID,
  MODEL,
  OPENAI_BASE_URL,
  ORDER_ANSWER,
  ORDER_ARGUMENTS,
  ORDER_QUESTION,
  STRUCTURED_ANSWER,
  fake,
  getOrderStatus,
  orderAnswer,
  orderCall,
  resetFake,
  toolResult,
  upstreamFormat,
} from './helpers.mjs';

const provider = createOpenAI({ baseURL: OPENAI_BASE_URL, apiKey: API_KEY });
const model = provider.responses(MODEL);
const noStore = { openai: { store: false } };

function orderTools(calls) {
  return {
    get_order_status: tool({
      description: 'Look up the current status of an internal order by its order ID.',
      inputSchema: z.object({ order_id: z.string() }),
      execute: async ({ order_id }) => {
        calls.push(order_id);
        return getOrderStatus({ order_id });
      },
    }),
  };
}

async function checkRoundTrip(calls) {
  assert.deepEqual(calls, ['ORD-10042']);
  const [first, second] = await fake.requests();
  assert.deepEqual(first.messages.at(-1), { role: 'user', content: ORDER_QUESTION });
  assert.deepEqual(first.tools.map((t) => t.function.name), ['get_order_status']);
  assert.deepEqual(toolResult(second), getOrderStatus({ order_id: 'ORD-10042' }));
  await fake.assertAllUsed();
}

beforeEach(resetFake);

test('generateText: a multi-step tool round trip', async () => {
  await fake.script(orderCall(), orderAnswer());
  const calls = [];
  const result = await generateText({
    model,
    maxRetries: 0,
    tools: orderTools(calls),
    stopWhen: isStepCount(3),
    prompt: ORDER_QUESTION,
    providerOptions: noStore,
  });
  assert.equal(result.text, ORDER_ANSWER);
  assert.equal(result.steps.length, 2);
  assert.equal(result.steps[0].toolCalls[0].toolCallId, CALL_ID);
  assert.deepEqual([result.totalUsage.inputTokens, result.totalUsage.outputTokens].map(Boolean), [true, true]);
  await checkRoundTrip(calls);
});

test('streamText: tool input deltas, then text deltas', async () => {
  await fake.script(orderCall(), { text_chunks: ['Order ORD-10042 ', 'is in transit.'] });
  const calls = [];
  const result = streamText({
    model,
    maxRetries: 0,
    tools: orderTools(calls),
    stopWhen: isStepCount(3),
    prompt: ORDER_QUESTION,
    providerOptions: noStore,
    onError: ({ error }) => {
      throw error;
    },
  });
  let input = '';
  const texts = [];
  const kinds = new Set();
  for await (const part of result.fullStream) {
    kinds.add(part.type);
    if (part.type === 'tool-input-delta') input += part.delta;
    if (part.type === 'text-delta') texts.push(part.text);
    assert.notEqual(part.type, 'error', JSON.stringify(part));
  }
  assert.equal(input, ORDER_ARGUMENTS);
  assert.equal(texts.join(''), 'Order ORD-10042 is in transit.');
  assert.ok(texts.length >= 2, texts);
  for (const kind of ['tool-input-start', 'tool-call', 'tool-result', 'finish-step', 'finish']) {
    assert.ok(kinds.has(kind), `${kind} missing: ${[...kinds]}`);
  }
  assert.equal(await result.text, 'Order ORD-10042 is in transit.');
  await checkRoundTrip(calls);
});

test('Output.object: structured output through text.format', async () => {
  await fake.script({ text: STRUCTURED_ANSWER });
  const { output } = await generateText({
    model,
    maxRetries: 0,
    output: Output.object({ schema: z.object({ status: z.string(), eta: z.string() }) }),
    prompt: 'Where is order ORD-10042?',
  });
  assert.deepEqual(output, { status: 'in_transit', eta: 'Friday' });
  const [request] = await fake.requests();
  const format = upstreamFormat(request);
  assert.equal(format.type, 'json_schema');
  assert.deepEqual(Object.keys(format.json_schema.schema.properties).sort(), ['eta', 'status']);
});

test('a second turn with the first turn replayed (store: false)', async () => {
  await fake.script({ text: 'It is in transit.' }, { text: 'It should arrive on Friday.' });
  const first = await generateText({ model, maxRetries: 0, prompt: 'Where is order ORD-10042?', providerOptions: noStore });
  const messages = [
    { role: 'user', content: 'Where is order ORD-10042?' },
    ...first.response.messages,
    { role: 'user', content: 'When will it arrive?' },
  ];
  const second = await generateText({ model, maxRetries: 0, messages, providerOptions: noStore });
  assert.equal(second.text, 'It should arrive on Friday.');
  const [, upstream] = await fake.requests();
  assert.deepEqual(
    upstream.messages.map((m) => [m.role, m.content]),
    [
      ['user', 'Where is order ORD-10042?'],
      ['assistant', 'It is in transit.'],
      ['user', 'When will it arrive?'],
    ],
  );
});
