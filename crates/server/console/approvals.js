// Pending approvals: each mcp_approval_request no continuation answered yet. Approving or
// denying continues the run exactly as any client does: a new response with
// previous_response_id and an mcp_approval_response input item (streamed, shown live).

import { call, stream } from './api.js';
import { append, clear, field, h, note, pretty, time } from './dom.js';
import { livePanel } from './live.js';

/** @param {HTMLElement} view */
export async function approvalsPage(view) {
  append(view, h('h1', {}, 'Pending approvals'));
  const list = await call('GET', '/v1/admin/approvals');
  if (list.data.length === 0) {
    append(view, h('p', { class: 'card', id: 'no-approvals' }, 'Nothing waits for approval.'));
    return;
  }
  for (const request of list.data) append(view, approvalCard(request));
}

function approvalCard(request) {
  const reason = h('input', { name: 'reason', placeholder: 'reason (optional)' });
  const output = h('div', { class: 'approval-output' });
  const answer = async (approve) => {
    for (const button of card.querySelectorAll('button')) /** @type {HTMLButtonElement} */ (button).disabled = true;
    clear(output);
    try {
      await continueRun(request, approve, /** @type {HTMLInputElement} */ (reason).value.trim(), output);
    } catch (err) {
      append(output, note(err.message, 'error'));
    }
  };
  const card = h(
    'section',
    { class: 'card approval-card', 'data-approval': request.id },
    h('h2', {}, `${request.server_label}.${request.name}`),
    h('p', { class: 'hint' }, 'Response ', h('a', { href: `#/trace/${encodeURIComponent(request.response_id)}` }, request.response_id), ` · ${request.model} · ${time(request.created_at)}`),
    h('div', { class: 'label' }, 'Arguments'),
    h('pre', { class: 'arguments' }, pretty(request.arguments)),
    field('Reason', reason),
    h(
      'div',
      { class: 'buttons' },
      h('button', { type: 'button', class: 'approve', onclick: () => answer(true) }, 'Approve'),
      h('button', { type: 'button', class: 'danger deny', onclick: () => answer(false) }, 'Deny'),
    ),
    output,
  );
  return card;
}

/** Posts the continuation (the same model, tools and instructions) and shows its stream. */
async function continueRun(request, approve, reason, output) {
  const previous = await call('GET', `/v1/responses/${encodeURIComponent(request.response_id)}`);
  const answer = { type: 'mcp_approval_response', approval_request_id: request.id, approve };
  if (reason) answer.reason = reason;
  const body = {
    model: previous.model,
    previous_response_id: previous.id,
    input: [answer],
    tools: previous.tools,
    stream: true,
  };
  if (previous.instructions) body.instructions = previous.instructions;
  const live = livePanel();
  append(output, note(approve ? 'Approved: the run continues.' : 'Denied: the run continues without the call.', 'ok'), live.panel);
  await stream('POST', '/v1/responses', body, live.onEvent);
}
