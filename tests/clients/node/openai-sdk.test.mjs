// The official `openai` npm SDK against agentd: a function-tool round trip continued with
// `previous_response_id`, streaming with typed event handlers and the `responses.stream()`
// helper, structured output (`zodTextFormat` + `responses.parse`, and a plain JSON schema),
// errors as the SDK's error classes, and cancelling a background run.

import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';

import OpenAI from 'openai';
import { zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';

import {
  API_KEY,
  CALL_ID,
  MODEL,
  OPENAI_BASE_URL,
  ORDER_ANSWER,
  ORDER_ARGUMENTS,
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

// Retries off: a retried request would take the next scripted reply.
const client = new OpenAI({ baseURL: OPENAI_BASE_URL, apiKey: API_KEY, maxRetries: 0, timeout: 60_000 });

beforeEach(resetFake);

test('function tool round trip continued with previous_response_id', async () => {
  await fake.script(orderCall(), orderAnswer());
  const first = await client.responses.create({ model: MODEL, input: ORDER_QUESTION, tools: [ORDER_TOOL] });
  assert.equal(first.status, 'completed');
  assert.equal(first.output_text, '');
  const calls = first.output.filter((item) => item.type === 'function_call');
  assert.equal(calls.length, 1);
  assert.equal(calls[0].call_id, CALL_ID);
  assert.equal(calls[0].name, 'get_order_status');
  assert.deepEqual(JSON.parse(calls[0].arguments), { order_id: 'ORD-10042' });
  assert.equal(first.tools[0].strict, true);

  const final = await client.responses.create({
    model: MODEL,
    previous_response_id: first.id,
    input: calls.map((call) => ({
      type: 'function_call_output',
      call_id: call.call_id,
      output: JSON.stringify(getOrderStatus(JSON.parse(call.arguments))),
    })),
    tools: [ORDER_TOOL],
  });
  assert.equal(final.status, 'completed');
  assert.equal(final.previous_response_id, first.id);
  assert.equal(final.output_text, ORDER_ANSWER);
  assert.deepEqual([final.usage.input_tokens, final.usage.output_tokens], [40, 12]);
  const message = final.output.find((item) => item.type === 'message');
  assert.equal(message.phase, 'final_answer');

  const [, second] = await fake.requests();
  assert.deepEqual(toolResult(second), getOrderStatus({ order_id: 'ORD-10042' }));
  await fake.assertAllUsed();
});

test('stream=true: typed events, argument deltas, invariants', async () => {
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
  const types = events.map((e) => e.type);
  assertInOrder(types, [
    'response.created',
    'response.output_item.added',
    'response.function_call_arguments.delta',
    'response.function_call_arguments.done',
    'response.output_item.done',
    'response.completed',
  ]);
  const added = events.find((e) => e.type === 'response.output_item.added');
  const deltas = events.filter((e) => e.type === 'response.function_call_arguments.delta');
  assert.ok(deltas.every((e) => e.item_id === added.item.id && e.output_index === added.output_index));
  assert.equal(deltas.map((e) => e.delta).join(''), ORDER_ARGUMENTS);
  const done = events.find((e) => e.type === 'response.function_call_arguments.done');
  assert.equal(done.arguments, ORDER_ARGUMENTS);
  assert.equal(done.item_id, added.item.id);
  await fake.assertAllUsed();
});

test('responses.stream(): typed handlers and finalResponse()', async () => {
  await fake.script({ text_chunks: ['Checking ', 'now.'], then_tool_calls: [[CALL_ID, 'get_order_status', ORDER_ARGUMENTS]] }, orderAnswer());
  const first = client.responses.stream({ model: MODEL, input: ORDER_QUESTION, tools: [ORDER_TOOL] });
  let argumentDeltas = '';
  let argumentsDone = null;
  let textDeltas = '';
  const seen = [];
  first.on('response.function_call_arguments.delta', (event) => {
    argumentDeltas += event.delta;
  });
  first.on('response.function_call_arguments.done', (event) => {
    argumentsDone = event.arguments;
  });
  first.on('response.output_text.delta', (event) => {
    textDeltas += event.delta;
  });
  first.on('event', (event) => seen.push(event));
  const response = await first.finalResponse();
  checkStreamInvariants(seen);
  assert.equal(argumentDeltas, ORDER_ARGUMENTS);
  assert.equal(argumentsDone, ORDER_ARGUMENTS);
  assert.equal(textDeltas, 'Checking now.');
  assert.equal(response.status, 'completed');
  const commentary = response.output.find((item) => item.type === 'message');
  assert.equal(commentary.phase, 'commentary');
  const call = response.output.find((item) => item.type === 'function_call');
  assert.equal(call.arguments, ORDER_ARGUMENTS);

  // The second turn, streamed as well, from the first with previous_response_id.
  const second = client.responses.stream({
    model: MODEL,
    previous_response_id: response.id,
    input: [{ type: 'function_call_output', call_id: call.call_id, output: JSON.stringify(getOrderStatus({ order_id: 'ORD-10042' })) }],
    tools: [ORDER_TOOL],
  });
  let text = '';
  second.on('response.output_text.delta', (event) => {
    text += event.delta;
  });
  const final = await second.finalResponse();
  assert.equal(text, ORDER_ANSWER);
  assert.equal(final.output_text, ORDER_ANSWER);
  assert.equal(final.output.at(-1).phase, 'final_answer');
  await fake.assertAllUsed();
});

const Order = z.object({ status: z.string(), eta: z.string() });

test('responses.parse with zodTextFormat', async () => {
  await fake.script({ text: STRUCTURED_ANSWER });
  const parsed = await client.responses.parse({
    model: MODEL,
    input: 'Where is order ORD-10042?',
    text: { format: zodTextFormat(Order, 'order') },
  });
  assert.deepEqual(parsed.output_parsed, { status: 'in_transit', eta: 'Friday' });
  assert.equal(parsed.text.format.type, 'json_schema');
  assert.equal(parsed.text.format.name, 'order');
  // text.format reached the model as Chat Completions' response_format.
  const [request] = await fake.requests();
  const format = upstreamFormat(request);
  assert.equal(format.type, 'json_schema');
  assert.equal(format.json_schema.name, 'order');
  assert.deepEqual(Object.keys(format.json_schema.schema.properties).sort(), ['eta', 'status']);
  await fake.assertAllUsed();
});

test('structured output with a JSON schema, streamed', async () => {
  await fake.script({ text_chunks: ['{"status":', '"in_transit",', '"eta":"Friday"}'] });
  const stream = client.responses.stream({
    model: MODEL,
    input: 'Where is order ORD-10042?',
    text: { format: { type: 'json_schema', name: 'order', schema: ORDER_SCHEMA, strict: true } },
  });
  const final = await stream.finalResponse();
  assert.deepEqual(JSON.parse(final.output_text), { status: 'in_transit', eta: 'Friday' });
  assert.deepEqual(final.text.format.schema, ORDER_SCHEMA);
  const [request] = await fake.requests();
  assert.deepEqual(upstreamFormat(request).json_schema.schema, ORDER_SCHEMA);
});

test('an answer that breaks the schema fails the response', async () => {
  await fake.script({ text: 'not json' });
  const response = await client.responses.create({
    model: MODEL,
    input: 'Where is order ORD-10042?',
    text: { format: { type: 'json_schema', name: 'order', schema: ORDER_SCHEMA, strict: true } },
  });
  assert.equal(response.status, 'failed');
  assert.ok(response.error?.message, JSON.stringify(response.error));
});

test('errors are the SDK error classes', async () => {
  await assert.rejects(
    client.responses.create({ model: MODEL, input: 'hi', frobnicate: true }),
    (err) => {
      assert.ok(err instanceof OpenAI.BadRequestError, err);
      assert.equal(err.status, 400);
      assert.equal(err.param, 'frobnicate');
      assert.equal(err.type, 'invalid_request');
      return true;
    },
  );
  await assert.rejects(client.responses.create({ model: 'xai/x', input: 'hi' }), (err) => {
    assert.ok(err instanceof OpenAI.BadRequestError, err);
    assert.match(err.message, /XAI_API_KEY/);
    return true;
  });
  await assert.rejects(client.responses.retrieve('resp_does_not_exist'), OpenAI.NotFoundError);
  await assert.rejects(client.responses.cancel('resp_does_not_exist'), OpenAI.NotFoundError);
  // Both text.format and a different response_format: refused, naming the field.
  await assert.rejects(
    client.responses.create({
      model: MODEL,
      input: 'hi',
      text: { format: { type: 'json_schema', name: 'order', schema: ORDER_SCHEMA } },
      response_format: { type: 'json_object' },
    }),
    OpenAI.BadRequestError,
  );
  assert.deepEqual(await fake.requests(), []);
  // A run that fails upstream is a response with status "failed" (agentd retries twice).
  await fake.script(...Array(3).fill({ error: [500, 'upstream down'] }));
  const failed = await client.responses.create({ model: MODEL, input: 'hi' });
  assert.equal(failed.status, 'failed');
  assert.ok(failed.error.code);
});

test('cancel a background run', async () => {
  await fake.script({ hang: true });
  const created = await client.responses.create({ model: MODEL, input: 'hi', background: true });
  assert.equal(created.status, 'queued');
  assert.equal(created.background, true);
  await waitFor(async () => (await fake.pending()) === 0, 'the run to reach the model');
  const cancelled = await client.responses.cancel(created.id);
  assert.equal(cancelled.id, created.id);
  assert.equal(cancelled.object, 'response');
  assert.equal(cancelled.status, 'cancelled');
  const again = await client.responses.cancel(created.id);
  assert.equal(again.status, 'cancelled');
  assert.equal((await client.responses.retrieve(created.id)).status, 'cancelled');

  // A completed run cannot be cancelled.
  await fake.script({ text: 'done' });
  const done = await client.responses.create({ model: MODEL, input: 'hi' });
  await assert.rejects(client.responses.cancel(done.id), OpenAI.BadRequestError);
});
