// The OpenAI Agents SDK for JavaScript (`@openai/agents`) against agentd: an `Agent` on an
// `OpenAIResponsesModel` whose `openai` client points at agentd runs a function tool round trip
// (the SDK runs the tool and replays the items, or continues with `previousResponseId`),
// streams (`run(..., {stream: true})`: raw Responses events and text deltas), and returns
// structured output (`outputType` as a zod schema: `text.format`). Tracing is off (it would
// export to OpenAI's servers).

import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';

import { Agent, OpenAIResponsesModel, run, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';

import {
  API_KEY,
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

setTracingDisabled(true);

const client = new OpenAI({ baseURL: OPENAI_BASE_URL, apiKey: API_KEY, maxRetries: 0, timeout: 60_000 });
const model = new OpenAIResponsesModel(client, MODEL);

function orderAgent(calls, modelSettings = {}) {
  const getOrderStatusTool = tool({
    name: 'get_order_status',
    description: 'Look up the current status of an internal order by its order ID.',
    parameters: z.object({ order_id: z.string() }),
    execute: async ({ order_id }) => {
      calls.push(order_id);
      return JSON.stringify(getOrderStatus({ order_id }));
    },
  });
  return new Agent({
    name: 'orders',
    instructions: 'You answer questions about orders.',
    tools: [getOrderStatusTool],
    model,
    modelSettings,
  });
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

test('tool round trip, the SDK replaying the items', async () => {
  await fake.script(orderCall(), orderAnswer());
  const calls = [];
  const result = await run(orderAgent(calls), ORDER_QUESTION);
  assert.equal(result.finalOutput, ORDER_ANSWER);
  await checkRoundTrip(calls);
});

test('tool round trip, then a next turn with previousResponseId', async () => {
  await fake.script(orderCall(), orderAnswer(), { text: 'You are welcome.' });
  const calls = [];
  const agent = orderAgent(calls);
  const first = await run(agent, ORDER_QUESTION);
  assert.equal(first.finalOutput, ORDER_ANSWER);
  assert.match(first.lastResponseId, /^resp_/);
  const next = await run(agent, 'Thanks!', { previousResponseId: first.lastResponseId });
  assert.equal(next.finalOutput, 'You are welcome.');
  const [, , third] = await fake.requests();
  // The whole chain reached the model: question, call, result, answer, thanks.
  assert.deepEqual(
    third.messages.filter((m) => m.role !== 'system').map((m) => m.role),
    ['user', 'assistant', 'tool', 'assistant', 'user'],
  );
  assert.deepEqual(calls, ['ORD-10042']);
});

test('streamed run: raw Responses events and text deltas', async () => {
  await fake.script(orderCall(), { text_chunks: ['Order ORD-10042 ', 'is in transit.'] });
  const calls = [];
  const result = await run(orderAgent(calls), ORDER_QUESTION, { stream: true });
  const raw = [];
  let text = '';
  const items = [];
  for await (const event of result) {
    if (event.type === 'raw_model_stream_event') {
      if (event.data.type === 'model') raw.push(event.data.event);
      if (event.data.type === 'output_text_delta') text += event.data.delta;
    }
    if (event.type === 'run_item_stream_event') items.push(event.name);
  }
  await result.completed;
  assert.equal(result.finalOutput, 'Order ORD-10042 is in transit.');
  assert.equal(text, 'Order ORD-10042 is in transit.');
  const argumentDeltas = raw.filter((e) => e.type === 'response.function_call_arguments.delta');
  assert.equal(argumentDeltas.map((e) => e.delta).join(''), ORDER_ARGUMENTS);
  assert.equal(raw.filter((e) => e.type === 'response.completed').length, 2);
  assert.deepEqual(items, ['tool_called', 'tool_output', 'message_output_created']);
  await checkRoundTrip(calls);
});

test('structured output with a zod outputType', async () => {
  await fake.script({ text: STRUCTURED_ANSWER });
  const agent = new Agent({
    name: 'orders',
    instructions: "Answer with the order's status.",
    model,
    outputType: z.object({ status: z.string(), eta: z.string() }),
  });
  const result = await run(agent, 'Where is order ORD-10042?');
  assert.deepEqual(result.finalOutput, { status: 'in_transit', eta: 'Friday' });
  const [request] = await fake.requests();
  const format = upstreamFormat(request);
  assert.equal(format.type, 'json_schema');
  assert.deepEqual(Object.keys(format.json_schema.schema.properties).sort(), ['eta', 'status']);
});

test('model settings applied, truncation "auto" refused naming the field', async () => {
  await fake.script(orderCall(), orderAnswer());
  const calls = [];
  const settings = { temperature: 0.25, topP: 0.5, maxTokens: 300, parallelToolCalls: false, store: false };
  const result = await run(orderAgent(calls, settings), ORDER_QUESTION);
  assert.equal(result.finalOutput, ORDER_ANSWER);
  for (const upstream of await fake.requests()) {
    assert.deepEqual([upstream.temperature, upstream.top_p, upstream.parallel_tool_calls], [0.25, 0.5, false]);
  }
  await resetFake();
  await assert.rejects(run(orderAgent([], { truncation: 'auto' }), ORDER_QUESTION), (err) => {
    assert.ok(err instanceof OpenAI.BadRequestError, err);
    assert.equal(err.param, 'truncation');
    return true;
  });
  assert.deepEqual(await fake.requests(), []);
});
