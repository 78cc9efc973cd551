// The project's responses: filters (status, model, time range) and pages, newest first.

import { call, query } from './api.js';
import { append, badge, clear, field, h, note, table, time } from './dom.js';

const STATUSES = ['', 'queued', 'in_progress', 'completed', 'failed', 'cancelled', 'requires_action', 'incomplete', 'cancelling'];

/** `datetime-local` text as Unix seconds. @param {string} text */
function seconds(text) {
  if (!text) return undefined;
  const ms = new Date(text).getTime();
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
}

/** Total tokens and cost of a response. */
export function usageText(usage) {
  if (!usage) return '—';
  const cost = usage.cost && typeof usage.cost.total_cost === 'number' ? ` · ${usage.cost.total_cost.toFixed(6)} ${usage.cost.currency}` : '';
  return `${usage.input_tokens} in / ${usage.output_tokens} out${cost}`;
}

/** @param {HTMLElement} view */
export async function responsesPage(view) {
  append(view, h('h1', {}, 'Responses'));
  const status = h('select', { name: 'status' }, ...STATUSES.map((s) => h('option', { value: s }, s || 'any')));
  const model = h('input', { name: 'model', placeholder: 'any model' });
  const from = h('input', { name: 'created_after', type: 'datetime-local' });
  const to = h('input', { name: 'created_before', type: 'datetime-local' });
  const results = h('section', { class: 'card', id: 'response-list' });
  const form = h(
    'form',
    { class: 'inline filters', id: 'response-filters' },
    field('Status', status),
    field('Model', model),
    field('From', from),
    field('To', to),
    h('button', { type: 'submit' }, 'Filter'),
  );
  append(view, form, results);

  const value = (el) => /** @type {HTMLInputElement} */ (el).value;
  /** @param {string|undefined} after */
  const load = async (after) => {
    const params = {
      status: value(status),
      model: value(model).trim(),
      created_after: seconds(value(from)),
      created_before: seconds(value(to)),
      after,
      limit: 20,
    };
    clear(results);
    try {
      const page = await call('GET', `/v1/admin/responses${query(params)}`);
      if (page.data.length === 0) {
        append(results, h('p', {}, 'No response matches.'));
        return;
      }
      append(
        results,
        table(
          ['Response', 'Created', 'Status', 'Model', 'Usage', 'Continues'],
          page.data.map((r) => [
            h('a', { href: `#/trace/${encodeURIComponent(r.id)}`, class: 'response-link' }, r.id),
            time(r.created_at),
            h('span', {}, badge(r.status), ' ', r.status === 'in_progress' || r.status === 'queued' ? h('a', { href: `#/live/${encodeURIComponent(r.id)}` }, 'live') : null),
            r.model,
            usageText(r.usage),
            r.previous_response_id ? h('a', { href: `#/trace/${encodeURIComponent(r.previous_response_id)}` }, r.previous_response_id) : '—',
          ]),
        ),
      );
      if (page.has_more && page.last_id) {
        append(results, h('button', { type: 'button', id: 'next-page', onclick: () => load(page.last_id) }, 'Next page'));
      }
    } catch (err) {
      append(results, note(err.message, 'error'));
    }
  };
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    load(undefined);
  });
  await load(undefined);
}
