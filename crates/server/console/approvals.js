// Pending approvals: each mcp_approval_request no continuation answered yet, grouped by the
// response that holds them. Answering continues the run exactly as any client does: a new
// response with previous_response_id and one mcp_approval_response input item per request of
// that response, all in the same continuation (the API requires every pending request of a
// response answered together), streamed and shown live.
//
// A response with one request is answered with one click (Approve or Deny). With several, each
// request gets its decision (and reason) first, then "Send the decisions" sends them together.

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
  /** @type {Map<string, any[]>} the requests by response, in the listing's order */
  const groups = new Map();
  for (const request of list.data) {
    const group = groups.get(request.response_id);
    if (group) group.push(request);
    else groups.set(request.response_id, [request]);
  }
  for (const requests of groups.values()) append(view, responseCard(requests));
}

/** The card of one response's pending requests. @param {any[]} requests */
function responseCard(requests) {
  const first = requests[0];
  const output = h('div', { class: 'approval-output' });
  /** @type {Map<string, {approve: boolean|null, reason: HTMLInputElement, row: HTMLElement}>} */
  const decisions = new Map();
  const single = requests.length === 1;
  const send = h('button', { type: 'button', class: 'send-decisions', disabled: true, onclick: () => submit() }, `Send the ${requests.length} decisions`);
  const card = h(
    'section',
    { class: 'card approval-card', 'data-response': first.response_id },
    h(
      'p',
      { class: 'hint' },
      'Response ',
      h('a', { href: `#/trace/${encodeURIComponent(first.response_id)}` }, first.response_id),
      ` · ${first.model} · ${time(first.created_at)}`,
      single ? '' : ` · ${requests.length} requests, answered together`,
    ),
  );
  const decide = (request, approve) => {
    const decision = decisions.get(request.id);
    if (!decision) return;
    decision.approve = approve;
    decision.row.dataset.decision = approve ? 'approve' : 'deny';
    for (const button of decision.row.querySelectorAll('button')) {
      const pressed = button.classList.contains(approve ? 'approve' : 'deny');
      button.setAttribute('aria-pressed', String(pressed));
    }
    if (single) {
      submit();
    } else {
      /** @type {HTMLButtonElement} */ (send).disabled = [...decisions.values()].some((d) => d.approve === null);
    }
  };
  for (const request of requests) {
    const reason = /** @type {HTMLInputElement} */ (h('input', { name: 'reason', placeholder: 'reason (optional)' }));
    const row = h(
      'div',
      { class: 'approval-request', 'data-approval': request.id },
      h('h2', {}, `${request.server_label}.${request.name}`),
      h('div', { class: 'label' }, 'Arguments'),
      h('pre', { class: 'arguments' }, pretty(request.arguments)),
      field('Reason', reason),
      h(
        'div',
        { class: 'buttons' },
        h('button', { type: 'button', class: 'approve', 'aria-pressed': 'false', onclick: () => decide(request, true) }, 'Approve'),
        h('button', { type: 'button', class: 'danger deny', 'aria-pressed': 'false', onclick: () => decide(request, false) }, 'Deny'),
      ),
    );
    decisions.set(request.id, { approve: null, reason, row });
    append(card, row);
  }
  if (!single) append(card, h('div', { class: 'buttons' }, send));
  append(card, output);
  const submit = async () => {
    for (const button of card.querySelectorAll('button')) /** @type {HTMLButtonElement} */ (button).disabled = true;
    for (const input of card.querySelectorAll('input')) /** @type {HTMLInputElement} */ (input).disabled = true;
    clear(output);
    const answers = requests.map((request) => {
      const decision = decisions.get(request.id);
      const answer = { type: 'mcp_approval_response', approval_request_id: request.id, approve: decision?.approve === true };
      const reason = decision ? decision.reason.value.trim() : '';
      if (reason) answer.reason = reason;
      return answer;
    });
    try {
      await continueRun(first.response_id, answers, output);
    } catch (err) {
      append(output, note(err.message, 'error'));
    }
  };
  return card;
}

/** What the continuation answers, in words. @param {any[]} answers */
function summary(answers) {
  if (answers.length === 1) return answers[0].approve ? 'Approved: the run continues.' : 'Denied: the run continues without the call.';
  const approved = answers.filter((a) => a.approve).length;
  return `${approved} approved, ${answers.length - approved} denied: the run continues.`;
}

/**
 * Posts the continuation (the same model, tools and instructions) with every answer and shows
 * its stream.
 * @param {string} responseId @param {any[]} answers @param {HTMLElement} output
 */
async function continueRun(responseId, answers, output) {
  const previous = await call('GET', `/v1/responses/${encodeURIComponent(responseId)}`);
  const body = {
    model: previous.model,
    previous_response_id: previous.id,
    input: answers,
    tools: previous.tools,
    stream: true,
  };
  if (previous.instructions) body.instructions = previous.instructions;
  const live = livePanel();
  append(output, note(summary(answers), 'ok'), live.panel);
  await stream('POST', '/v1/responses', body, live.onEvent);
}
