// What every Node client test shares: the agentd under test, the scripted fake model provider
// behind it, and the docs' order-status tool (the same as ../support.py).
//
// test_node.py runs each `*.test.mjs` file here with Node's own test runner against the pytest
// session's agentd (through its recording proxy) and fake provider, which it names in
// AGENTD_URL and FAKE_CONTROL_URL. The files share that one fake: run them one at a time, and
// reset the fake before each test (`beforeEach(resetFake)`).

import assert from 'node:assert/strict';

function required(name) {
  const value = process.env[name];
  if (!value) {
    throw new Error(
      `${name} is not set: these tests run from tests/clients/test_node.py ` +
        '(tests/clients/run.sh -k node), which starts agentd and the fake provider',
    );
  }
  return value.replace(/\/$/, '');
}

/** agentd's root URL (the Perplexity SDK's base URL; the OpenAI SDKs' is `${AGENTD_URL}/v1`). */
export const AGENTD_URL = required('AGENTD_URL');
export const OPENAI_BASE_URL = `${AGENTD_URL}/v1`;
const CONTROL_URL = required('FAKE_CONTROL_URL');

/** Any `openai/<model>` id reaches the fake provider. */
export const MODEL = 'openai/gpt-fake';
/** What the SDKs send as their API key (agentd runs in open mode on loopback). */
export const API_KEY = 'any';

async function control(method, path, body) {
  const response = await fetch(`${CONTROL_URL}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  assert.equal(response.status, 200, `fake ${method} ${path}: ${text}`);
  return JSON.parse(text);
}

/** The fake provider's control API (crates/testkit/src/bin/fake_provider.rs). */
export const fake = {
  /** Queues replies, one per upstream request, e.g. `{text: 'Hi'}`. */
  script: (...replies) => control('POST', '/script', replies),
  /** The upstream request bodies agentd sent since the last reset (Chat Completions JSON). */
  requests: () => control('GET', '/requests'),
  pending: async () => (await control('GET', '/pending')).pending_replies,
  reset: () => control('POST', '/reset'),
  async assertAllUsed() {
    assert.equal(await fake.pending(), 0, 'some scripted replies were never requested');
  },
};

export async function resetFake() {
  await fake.reset();
}

/** Waits (bounded) until `check()` is true. */
export async function waitFor(check, what, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  assert.fail(`timed out waiting for ${what}`);
}

// The docs' order-status function tool, as in ../support.py.
export const ORDER_TOOL = {
  type: 'function',
  name: 'get_order_status',
  description: 'Look up the current status of an internal order by its order ID.',
  parameters: {
    type: 'object',
    properties: { order_id: { type: 'string' } },
    required: ['order_id'],
    additionalProperties: false,
  },
  strict: true,
};
export const ORDER_QUESTION = "What's the status of order ORD-10042?";
export const ORDER_ARGUMENTS = '{"order_id":"ORD-10042"}';
export const ORDER_ANSWER = 'Order ORD-10042 is in transit and should arrive on Friday.';
export const CALL_ID = 'call_Ku9yfMSIZWrJBGm2wqCaFF0G';

/** The caller's own function, which the service never runs. */
export function getOrderStatus({ order_id }) {
  return { order_id, status: 'in_transit', eta: 'Friday' };
}

/** The fake model's first turn: one get_order_status call. */
export const orderCall = (callId = CALL_ID) => ({
  tool_calls: [[callId, 'get_order_status', ORDER_ARGUMENTS]],
});
/** The fake model's second turn: the final text. */
export const orderAnswer = () => ({ text: ORDER_ANSWER, usage: [40, 12] });

// Structured output: the schema every test asks for and the answer the fake gives.
export const ORDER_SCHEMA = {
  type: 'object',
  properties: { status: { type: 'string' }, eta: { type: 'string' } },
  required: ['status', 'eta'],
  additionalProperties: false,
};
export const STRUCTURED_ANSWER = '{"status":"in_transit","eta":"Friday"}';

/** The `response_format` agentd sent upstream (Chat Completions), by schema name. */
export function upstreamFormat(request) {
  assert.ok(request.response_format, `no response_format upstream: ${JSON.stringify(request)}`);
  return request.response_format;
}

/** The upstream `tool` message answering `callId` (Chat Completions). */
export function toolResult(request, callId = CALL_ID) {
  const tools = request.messages.filter((m) => m.role === 'tool');
  assert.equal(tools.length, 1, JSON.stringify(request.messages));
  assert.equal(tools[0].tool_call_id, callId);
  return JSON.parse(tools[0].content);
}

/** design.md §7 stream invariants on parsed events (objects with `type`, `sequence_number`). */
export function checkStreamInvariants(events) {
  const types = events.map((e) => e.type);
  assert.ok(types.length > 0, 'empty stream');
  assert.equal(types[0], 'response.created', types.join(' '));
  const numbers = events.map((e) => e.sequence_number);
  for (let i = 1; i < numbers.length; i++) {
    assert.ok(numbers[i - 1] < numbers[i], `sequence numbers not increasing: ${numbers}`);
  }
  const terminal = new Set(['response.completed', 'response.failed', 'response.incomplete', 'response.cancelled']);
  assert.equal(types.filter((t) => terminal.has(t)).length, 1, types.join(' '));
  assert.ok(terminal.has(types.at(-1)), types.join(' '));
}

/** `expected` occurs in `types` in this order (others may come between). */
export function assertInOrder(types, expected) {
  let position = 0;
  for (const wanted of expected) {
    const at = types.indexOf(wanted, position);
    assert.ok(at >= 0, `${wanted} missing or out of order in ${types.join(' ')}`);
    position = at + 1;
  }
}
