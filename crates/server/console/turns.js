// The model turns of one response, for its trace: each call to the model (a step, or the next
// model of the chain taking a failed step over) with when it started, how long it took, the
// time to its first token, the model, its tokens and its error (GET /v1/admin/responses/{id}/turns).

import { call } from './api.js';
import { append, h, note, table } from './dom.js';

/** A duration in milliseconds as seconds. @param {number|null|undefined} ms */
export function seconds(ms) {
  if (ms === null || ms === undefined) return '—';
  return `${(ms / 1000).toFixed(3)} s`;
}

/** A Unix time in milliseconds as local time with milliseconds. @param {number} ms */
function started(ms) {
  const at = new Date(ms);
  return `${at.toLocaleString()}.${String(at.getMilliseconds()).padStart(3, '0')}`;
}

/** @param {any} value */
function count(value) {
  return value === undefined || value === null ? '—' : String(value);
}

/**
 * Fills the trace's "Model turns" card.
 * @param {HTMLElement} box
 * @param {any} response the response object (its status says whether turns are still to come)
 */
export async function renderTurns(box, response) {
  let turns;
  try {
    turns = (await call('GET', `/v1/admin/responses/${encodeURIComponent(response.id)}/turns`)).data;
  } catch (err) {
    append(box, note(err.message, 'error'));
    return;
  }
  if (turns.length === 0) {
    const running = response.status === 'queued' || response.status === 'in_progress';
    append(box, h('p', { id: 'no-turns' }, running ? 'The model turns are recorded when the run ends.' : 'No model turn recorded.'));
    return;
  }
  const rows = turns.map((turn, index) => {
    const usage = turn.usage;
    const status = turn.error ? h('span', { class: 'error-text' }, `${turn.status}: ${turn.error}`) : turn.status;
    return [
      String(index + 1),
      String(turn.step),
      started(turn.started_at_ms),
      seconds(turn.duration_ms),
      seconds(turn.time_to_first_token_ms),
      turn.model,
      count(usage?.input_tokens),
      count(usage?.output_tokens),
      count(usage?.reasoning_tokens),
      count(usage?.cached_tokens),
      status,
    ];
  });
  const list = table(['#', 'Step', 'Started', 'Duration', 'TTFT', 'Model', 'Input', 'Output', 'Reasoning', 'Cached', 'Status'], rows);
  list.id = 'turns-table';
  append(box, list);
}
