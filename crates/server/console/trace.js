// The trace of one response: its model turns (turns.js), what it continues (the
// previous_response_id chain), its input, every step in order (model messages and reasoning,
// tool listings, each tool call with its arguments and output, approval requests, errors),
// usage and cost, and its stored event log.

import { call, query, stream } from './api.js';
import { append, badge, clear, h, note, pretty, table, time } from './dom.js';
import { usageText } from './responses.js';
import { renderTurns } from './turns.js';

/** How far back the chain is followed. */
const MAX_CHAIN = 20;

/** @param {HTMLElement} view @param {string} id */
export async function tracePage(view, id) {
  const path = `/v1/responses/${encodeURIComponent(id)}`;
  const response = await call('GET', path);
  append(view, h('p', {}, h('a', { href: '#/responses' }, '← Responses')), h('h1', {}, 'Trace ', h('code', {}, response.id), ' ', badge(response.status)));
  if (response.status === 'in_progress' || response.status === 'queued') {
    append(view, h('p', {}, h('a', { href: `#/live/${encodeURIComponent(id)}`, id: 'follow-live' }, 'Follow it live')));
  }
  append(view, summary(response));
  const turns = h('section', { class: 'card', id: 'trace-turns' }, h('h2', {}, 'Model turns'));
  const chain = h('section', { class: 'card', id: 'trace-chain' }, h('h2', {}, 'Continuation chain'));
  const input = h('section', { class: 'card', id: 'trace-input' }, h('h2', {}, 'Input'));
  const steps = h('section', { class: 'card', id: 'trace-steps' }, h('h2', {}, 'Steps'));
  const events = h('section', { class: 'card', id: 'trace-events' }, h('h2', {}, 'Event log'));
  append(view, turns, chain, input, steps, events);
  renderSteps(steps, response.output);
  await Promise.all([renderTurns(turns, response), renderChain(chain, response), renderInput(input, path), renderEvents(events, path)]);
}

/** Status, model, times, usage, cost, error. */
export function summary(response) {
  const usage = response.usage;
  const rows = [
    ['Model', response.model],
    ['Created', time(response.created_at)],
    ['Completed', time(response.completed_at)],
    ['Duration', response.completed_at ? `${response.completed_at - response.created_at} s` : '—'],
    ['Usage', usageText(usage)],
  ];
  if (usage) {
    rows.push(['Tokens', `${usage.total_tokens} total, ${usage.input_tokens_details?.cached_tokens ?? 0} cached, ${usage.output_tokens_details?.reasoning_tokens ?? 0} reasoning`]);
    const tools = Object.entries(usage.tool_calls_details || {});
    if (tools.length) rows.push(['Tool calls', tools.map(([name, d]) => `${name}: ${JSON.stringify(d)}`).join('; ')]);
    if (usage.cost) rows.push(['Cost', `${usage.cost.total_cost} ${usage.cost.currency} (input ${usage.cost.input_cost}, output ${usage.cost.output_cost}${usage.cost.tool_calls_cost ? `, tools ${usage.cost.tool_calls_cost}` : ''})`]);
  }
  if (response.error) rows.push(['Error', h('span', { class: 'error-text', id: 'trace-error' }, `${response.error.code || response.error.type || 'error'}: ${response.error.message}`)]);
  if (response.incomplete_details) rows.push(['Incomplete', response.incomplete_details.reason]);
  const tools = (response.tools || []).map((t) => t.server_label || t.id || t.name || t.type);
  if (tools.length) rows.push(['Tools', tools.join(', ')]);
  return h('section', { class: 'card', id: 'trace-summary' }, h('dl', { class: 'facts' }, ...rows.flatMap(([k, v]) => [h('dt', {}, k), h('dd', {}, v)])));
}

async function renderChain(box, response) {
  /** @type {any[]} */
  const before = [];
  let previous = response.previous_response_id;
  while (previous && before.length < MAX_CHAIN) {
    try {
      const earlier = await call('GET', `/v1/responses/${encodeURIComponent(previous)}`);
      before.unshift(earlier);
      previous = earlier.previous_response_id;
    } catch {
      before.unshift({ id: previous, status: 'not stored' });
      break;
    }
  }
  if (before.length === 0) {
    append(box, h('p', {}, 'The first response of its chain.'));
    return;
  }
  const list = h('ol', { class: 'chain' });
  for (const r of before) {
    append(list, h('li', {}, h('a', { href: `#/trace/${encodeURIComponent(r.id)}` }, r.id), ' ', badge(r.status)));
  }
  append(list, h('li', { class: 'current' }, h('code', {}, response.id), ' (this response)'));
  append(box, list);
}

async function renderInput(box, path) {
  try {
    const items = await call('GET', `${path}/input_items${query({ order: 'asc', limit: 100 })}`);
    if (items.data.length === 0) {
      append(box, h('p', {}, 'No input items.'));
      return;
    }
    append(box, h('ol', { class: 'items' }, ...items.data.map((item) => h('li', {}, inputItem(item)))));
  } catch (err) {
    append(box, note(err.message, 'error'));
  }
}

function text(content) {
  if (typeof content === 'string') return content;
  return (content || []).map((part) => part.text ?? (part.type ? `[${part.type}]` : '')).join('\n');
}

function inputItem(item) {
  switch (item.type) {
    case 'message':
      return h('div', { class: 'step' }, h('strong', {}, item.role), h('pre', {}, text(item.content)));
    case 'mcp_approval_response':
      return h(
        'div',
        { class: `step approval ${item.approve ? 'approved' : 'denied'}` },
        h('strong', {}, item.approve ? 'Approved' : 'Denied'),
        ' ',
        h('code', {}, item.approval_request_id),
        item.reason ? h('p', {}, `Reason: ${item.reason}`) : null,
      );
    default:
      return h('div', { class: 'step' }, h('strong', {}, item.type || 'item'), h('pre', {}, pretty(item)));
  }
}

/** The output items in order, each a numbered step. */
function renderSteps(box, output) {
  if (!output || output.length === 0) {
    append(box, h('p', {}, 'No output.'));
    return;
  }
  append(box, h('ol', { class: 'items' }, ...output.map((item) => h('li', { 'data-type': item.type }, step(item)))));
}

function step(item) {
  const head = (title, ...rest) => h('div', { class: 'step-head' }, h('strong', {}, title), ...rest);
  switch (item.type) {
    case 'message':
      return h('div', { class: 'step message' }, head(`Model message (${item.role})`), h('pre', {}, text(item.content)));
    case 'reasoning':
      return h('div', { class: 'step reasoning' }, head('Reasoning'), h('pre', {}, (item.summary || []).map((s) => s.text).join('\n') || '(not shown)'));
    case 'mcp_list_tools':
      return h(
        'div',
        { class: 'step' },
        head(`Tools listed from ${item.server_label}`),
        item.error ? h('p', { class: 'error-text' }, item.error) : h('p', {}, (item.tools || []).map((t) => t.name).join(', ')),
      );
    case 'mcp_call':
      return h(
        'div',
        { class: 'step tool-call' },
        head(`Tool call ${item.server_label}.${item.name}`, item.approval_request_id ? h('span', { class: 'hint' }, ` (approved: ${item.approval_request_id})`) : null),
        h('div', { class: 'label' }, 'Arguments'),
        h('pre', { class: 'arguments' }, pretty(item.arguments)),
        item.error ? h('p', { class: 'error-text' }, `Error: ${item.error}`) : h('div', {}, h('div', { class: 'label' }, 'Output'), h('pre', { class: 'tool-output' }, item.output ?? '')),
      );
    case 'mcp_approval_request':
      return h(
        'div',
        { class: 'step approval' },
        head(`Approval requested: ${item.server_label}.${item.name}`, ' ', h('a', { href: '#/approvals' }, 'answer')),
        h('pre', { class: 'arguments' }, pretty(item.arguments)),
      );
    case 'function_call':
      return h('div', { class: 'step tool-call' }, head(`Function call ${item.name}`, h('code', {}, ` ${item.call_id}`)), h('pre', { class: 'arguments' }, pretty(item.arguments)));
    default:
      return h('div', { class: 'step' }, head(item.type), h('pre', {}, pretty(item)));
  }
}

async function renderEvents(box, path) {
  const output = h('div');
  const show = h(
    'button',
    {
      type: 'button',
      id: 'show-events',
      onclick: async () => {
        clear(output);
        /** @type {any[]} */
        const events = [];
        try {
          await stream('GET', `${path}${query({ stream: 'true' })}`, undefined, (event) => events.push(event));
          append(
            output,
            table(
              ['#', 'Event', 'Item'],
              events.map((e) => [String(e.sequence_number), e.type, e.item ? `${e.item.type}${e.item.name ? ` ${e.item.name}` : ''}` : '']),
            ),
          );
        } catch (err) {
          append(output, note(err.message, 'error'));
        }
      },
    },
    'Show the stored event log',
  );
  append(box, show, output);
}
