// LangChain.js (`@langchain/openai`) against agentd: `new ChatOpenAI({useResponsesApi: true,
// configuration: {baseURL}})` runs a function tool round trip (`bindTools`; the caller runs the
// tool and sends the history back, or continues with the `previous_response_id` call option),
// streams (`.stream()`: tool-call chunks and text chunks), and returns structured output
// (`withStructuredOutput(zod, {method: 'jsonSchema'})`: `text.format`).

import assert from 'node:assert/strict';
import { beforeEach, test } from 'node:test';

import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import OpenAI from 'openai';
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

const getOrderStatusTool = tool(async ({ order_id }) => JSON.stringify(getOrderStatus({ order_id })), {
  name: 'get_order_status',
  description: 'Look up the current status of an internal order by its order ID.',
  schema: z.object({ order_id: z.string() }),
});

function chat(options = {}) {
  return new ChatOpenAI({
    model: MODEL,
    apiKey: API_KEY,
    maxRetries: 0,
    useResponsesApi: true,
    configuration: { baseURL: OPENAI_BASE_URL },
    ...options,
  });
}

async function runTools(message) {
  return Promise.all(
    message.tool_calls.map(
      async (call) => new ToolMessage({ content: await getOrderStatusTool.invoke(call.args), tool_call_id: call.id }),
    ),
  );
}

async function checkRoundTrip() {
  const [first, second] = await fake.requests();
  assert.deepEqual(first.messages.at(-1), { role: 'user', content: ORDER_QUESTION });
  assert.deepEqual(first.tools.map((t) => t.function.name), ['get_order_status']);
  assert.deepEqual(toolResult(second), getOrderStatus({ order_id: 'ORD-10042' }));
  await fake.assertAllUsed();
}

beforeEach(resetFake);

test('tool round trip sending the history', async () => {
  await fake.script(orderCall(), orderAnswer());
  const llm = chat().bindTools([getOrderStatusTool]);
  const history = [new HumanMessage(ORDER_QUESTION)];
  const reply = await llm.invoke(history);
  assert.ok(reply instanceof AIMessage);
  assert.deepEqual(
    reply.tool_calls.map((c) => [c.id, c.name, c.args]),
    [[CALL_ID, 'get_order_status', { order_id: 'ORD-10042' }]],
  );
  history.push(reply, ...(await runTools(reply)));
  const final = await llm.invoke(history);
  assert.equal(final.text, ORDER_ANSWER);
  assert.deepEqual([final.usage_metadata.input_tokens, final.usage_metadata.output_tokens], [40, 12]);
  await checkRoundTrip();
});

test('tool round trip continued with previous_response_id', async () => {
  await fake.script(orderCall(), orderAnswer());
  const llm = chat().bindTools([getOrderStatusTool]);
  const reply = await llm.invoke([new HumanMessage(ORDER_QUESTION)]);
  assert.match(reply.response_metadata.id, /^resp_/);
  const final = await llm.invoke(await runTools(reply), { previous_response_id: reply.response_metadata.id });
  assert.equal(final.text, ORDER_ANSWER);
  await checkRoundTrip();
});

test('streaming: tool-call chunks, then text chunks', async () => {
  await fake.script(orderCall(), { text_chunks: ['Order ORD-10042 ', 'is in transit.'] });
  const llm = chat({ streaming: true }).bindTools([getOrderStatusTool]);
  const history = [new HumanMessage(ORDER_QUESTION)];
  let reply;
  const argumentPieces = [];
  for await (const chunk of await llm.stream(history)) {
    reply = reply === undefined ? chunk : reply.concat(chunk);
    for (const piece of chunk.tool_call_chunks ?? []) if (piece.args) argumentPieces.push(piece.args);
  }
  assert.equal(argumentPieces.join(''), ORDER_ARGUMENTS);
  assert.deepEqual(reply.tool_calls.map((c) => [c.name, c.args]), [['get_order_status', { order_id: 'ORD-10042' }]]);

  history.push(new AIMessage({ content: reply.content, tool_calls: reply.tool_calls, id: reply.id }));
  history.push(...(await runTools(reply)));
  const texts = [];
  for await (const chunk of await llm.stream(history)) if (chunk.text) texts.push(chunk.text);
  assert.equal(texts.join(''), 'Order ORD-10042 is in transit.');
  assert.ok(texts.length >= 2, texts);
  await checkRoundTrip();
});

test('withStructuredOutput (jsonSchema): text.format', async () => {
  await fake.script({ text: STRUCTURED_ANSWER });
  const llm = chat().withStructuredOutput(z.object({ status: z.string(), eta: z.string() }), {
    name: 'order',
    method: 'jsonSchema',
    strict: true,
  });
  assert.deepEqual(await llm.invoke('Where is order ORD-10042?'), { status: 'in_transit', eta: 'Friday' });
  const [request] = await fake.requests();
  assert.equal(upstreamFormat(request).json_schema.name, 'order');
});

test('truncation "auto" is refused naming the field', async () => {
  await assert.rejects(chat().invoke('hi', { truncation: 'auto' }), (err) => {
    assert.equal(err.status, 400, err);
    assert.ok(err instanceof OpenAI.BadRequestError || err.name === 'BadRequestError', err);
    assert.match(err.message, /truncation/);
    return true;
  });
  assert.deepEqual(await fake.requests(), []);
});
