// The Vercel AI SDK's documented multi-turn pattern with its default `store: true`: the second
// turn's `messages` carry the first turn's `response.messages`, and the SDK sends the earlier
// assistant text back as `{"type": "item_reference", "id": "msg_…"}` (the id of the stored
// output message), which agentd resolves from the project's stored items.

import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';

import { createOpenAI } from '@ai-sdk/openai';
import { generateText, isStepCount, streamText, tool } from 'ai';
import { z } from 'zod';

import {
  API_KEY,
  MODEL,
  OPENAI_BASE_URL,
  ORDER_ANSWER,
  ORDER_ARGUMENTS,
  ORDER_QUESTION,
  CALL_ID,
  fake,
  getOrderStatus,
  orderAnswer,
  resetFake,
  toolResult,
} from './helpers.mjs';

const provider = createOpenAI({ baseURL: OPENAI_BASE_URL, apiKey: API_KEY });
const model = provider.responses(MODEL);

beforeEach(resetFake);

test('a second turn sends the first answer as an item_reference (store: true)', async () => {
  await fake.script({ text: 'It is in transit.' }, { text: 'It should arrive on Friday.' });
  const first = await generateText({ model, maxRetries: 0, prompt: 'Where is order ORD-10042?' });
  assert.equal(first.text, 'It is in transit.');
  const itemId = first.response.messages[0].content[0].providerOptions.openai.itemId;
  assert.match(itemId, /^msg_/);

  const second = await generateText({
    model,
    maxRetries: 0,
    messages: [
      { role: 'user', content: 'Where is order ORD-10042?' },
      ...first.response.messages,
      { role: 'user', content: 'When will it arrive?' },
    ],
  });
  assert.equal(second.text, 'It should arrive on Friday.');
  // The reference resolved to the stored message: the model saw the whole conversation.
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

test('a tool step after commentary text references that text (store: true, streamed)', async () => {
  await fake.script(
    { text_chunks: ['Let me check.'], then_tool_calls: [[CALL_ID, 'get_order_status', ORDER_ARGUMENTS]] },
    orderAnswer(),
  );
  const calls = [];
  const result = streamText({
    model,
    maxRetries: 0,
    tools: {
      get_order_status: tool({
        description: 'Look up the current status of an internal order by its order ID.',
        inputSchema: z.object({ order_id: z.string() }),
        execute: async ({ order_id }) => {
          calls.push(order_id);
          return getOrderStatus({ order_id });
        },
      }),
    },
    stopWhen: isStepCount(3),
    prompt: ORDER_QUESTION,
    onError: ({ error }) => {
      throw error;
    },
  });
  const steps = await result.steps;
  assert.deepEqual(steps.map((step) => step.text), ['Let me check.', ORDER_ANSWER]);
  assert.deepEqual(calls, ['ORD-10042']);
  const [, second] = await fake.requests();
  const assistant = second.messages.filter((m) => m.role === 'assistant');
  assert.equal(assistant.length, 1);
  assert.equal(assistant[0].content, 'Let me check.');
  assert.deepEqual(toolResult(second), getOrderStatus({ order_id: 'ORD-10042' }));
});
