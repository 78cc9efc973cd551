// The Perplexity TypeScript SDK (`@perplexity-ai/perplexity_ai`) against agentd: the docs'
// order-status round trip continued with `previous_response_id`, streaming, structured output
// with `response_format`, errors as the SDK's error classes, and cancelling a background run.

import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';

import Perplexity from '@perplexity-ai/perplexity_ai';

import {
  AGENTD_URL,
  API_KEY,
  CALL_ID,
  MODEL,
  ORDER_ANSWER,
  ORDER_QUESTION,
  ORDER_SCHEMA,
  ORDER_TOOL,
  STRUCTURED_ANSWER,
  assertInOrder,
  checkStreamInvariants,
  fake,
  getOrderStatus,
  orderAnswer,
  orderCall,
  resetFake,
  toolResult,
  upstreamFormat,
  waitFor,
} from './helpers.mjs';

// The SDK posts to "/v1/responses" itself: its base URL is the server root. Retries off.
const client = new Perplexity({ baseURL: AGENTD_URL, apiKey: API_KEY, maxRetries: 0, timeout: 60_000 });

beforeEach(resetFake);

test('function tool round trip continued with previous_response_id', async () => {
  await fake.script(orderCall(), orderAnswer());
  const first = await client.responses.create({ model: MODEL, input: ORDER_QUESTION, tools: [ORDER_TOOL] });
  assert.equal(first.status, 'completed');
  assert.equal(first.output_text, '');
  const [call] = first.output.filter((item) => item.type === 'function_call');
  assert.equal(call.call_id, CALL_ID);
  assert.ok(call.id.startsWith('fc_'));

  const final = await client.responses.create({
    model: MODEL,
    previous_response_id: first.id,
    input: [
      {
        type: 'function_call_output',
        call_id: call.call_id,
        output: JSON.stringify(getOrderStatus(JSON.parse(call.arguments))),
      },
    ],
    tools: [ORDER_TOOL],
  });
  assert.equal(final.status, 'completed');
  assert.equal(final.output_text, ORDER_ANSWER);
  assert.equal(final.previous_response_id, first.id);
  const [, second] = await fake.requests();
  assert.deepEqual(toolResult(second), getOrderStatus({ order_id: 'ORD-10042' }));
  assert.equal((await client.responses.retrieve(final.id)).output_text, ORDER_ANSWER);
  await fake.assertAllUsed();
});

test('stream: events in order, deltas add up to the text', async () => {
  const chunks = ['The ', 'order ', 'is ', 'in ', 'transit.'];
  await fake.script({ text_chunks: chunks, usage: [21, 5] });
  const stream = await client.responses.create({ model: MODEL, input: 'Where is my order?', stream: true });
  const events = [];
  for await (const event of stream) events.push(event);
  checkStreamInvariants(events);
  const types = events.map((e) => e.type);
  assertInOrder(types, [
    'response.created',
    'response.in_progress',
    'response.output_item.added',
    'response.output_text.delta',
    'response.output_text.done',
    'response.output_item.done',
    'response.completed',
  ]);
  const text = events
    .filter((e) => e.type === 'response.output_text.delta')
    .map((e) => e.delta)
    .join('');
  assert.equal(text, chunks.join(''));
  const final = events.at(-1).response;
  assert.equal(final.status, 'completed');
  assert.deepEqual([final.usage.input_tokens, final.usage.output_tokens], [21, 5]);
});

test('stream: a function call, with argument events the SDK passes through', async () => {
  await fake.script(orderCall());
  const stream = await client.responses.create({
    model: MODEL,
    input: ORDER_QUESTION,
    tools: [ORDER_TOOL],
    stream: true,
  });
  const events = [];
  for await (const event of stream) events.push(event);
  checkStreamInvariants(events);
  const done = events.find((e) => e.type === 'response.output_item.done');
  assert.equal(done.item.type, 'function_call');
  assert.equal(done.item.call_id, CALL_ID);
  assert.ok(events.some((e) => e.type === 'response.function_call_arguments.done'));
});

test('structured output with response_format', async () => {
  await fake.script({ text: STRUCTURED_ANSWER });
  const response = await client.responses.create({
    model: MODEL,
    input: 'Where is order ORD-10042?',
    response_format: { type: 'json_schema', json_schema: { name: 'order', schema: ORDER_SCHEMA, strict: true } },
  });
  assert.equal(response.status, 'completed');
  assert.deepEqual(JSON.parse(response.output_text), { status: 'in_transit', eta: 'Friday' });
  const [request] = await fake.requests();
  assert.deepEqual(upstreamFormat(request).json_schema.schema, ORDER_SCHEMA);
});

test('errors are the SDK error classes', async () => {
  await assert.rejects(client.responses.create({ model: MODEL, input: 'hi', frobnicate: true }), (err) => {
    assert.ok(err instanceof Perplexity.BadRequestError, err);
    assert.equal(err.status, 400);
    assert.equal(err.error.error.param, 'frobnicate');
    return true;
  });
  await assert.rejects(client.responses.retrieve('resp_does_not_exist'), Perplexity.NotFoundError);
  assert.deepEqual(await fake.requests(), []);
});

test('cancel a background run', async () => {
  await fake.script({ hang: true });
  const created = await client.responses.create({ model: MODEL, input: 'hi', background: true });
  assert.equal(created.status, 'queued');
  await waitFor(async () => (await fake.pending()) === 0, 'the run to reach the model');
  const ack = await client.responses.cancel(created.id);
  assert.equal(ack.response_id, created.id);
  assert.equal(ack.status, 'cancelled');
  assert.equal((await client.responses.retrieve(created.id)).status, 'cancelled');
  await fake.script({ text: 'done' });
  const done = await client.responses.create({ model: MODEL, input: 'hi' });
  await assert.rejects(client.responses.cancel(done.id), Perplexity.BadRequestError);
});
