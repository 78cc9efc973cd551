// The live view of a running response: follows its stream (GET ?stream=true&starting_after=N,
// picking up after the last event seen if the connection drops) and shows the text as it is
// written, each item as it starts and ends, and the final status.

import { query, stream } from './api.js';
import { append, badge, clear, h, note } from './dom.js';

const TERMINAL = ['response.completed', 'response.failed', 'response.incomplete', 'response.cancelled'];

/** The stream being followed, stopped when the page changes. */
let current = null;

export function stopLive() {
  if (current) current.abort();
  current = null;
}

/** A panel that renders stream events. */
export function livePanel() {
  const status = h('p', { class: 'live-status', id: 'live-status' }, 'Waiting for events…');
  const items = h('ol', { class: 'items live-items', id: 'live-items' });
  const textBox = h('pre', { class: 'live-text', id: 'live-text' });
  const done = h('div', { id: 'live-done' });
  const panel = h('div', { class: 'live' }, status, items, h('div', { class: 'label' }, 'Text'), textBox, done);
  const lines = new Map();
  let responseId = null;
  // When each item started and ended as this page saw the stream (events carry no times; the
  // model turns' stored times are in the trace once the run ended): seconds since the first
  // event.
  let started = null;
  const elapsed = () => `+${((performance.now() - started) / 1000).toFixed(2)} s`;
  /** @param {any} event */
  const onEvent = (event) => {
    if (started === null) started = performance.now();
    if (event.response && event.response.id) responseId = event.response.id;
    switch (event.type) {
      case 'response.created':
      case 'response.in_progress':
        clear(status);
        append(status, badge(event.response.status), ' ', event.response.model || '');
        break;
      case 'response.output_text.delta':
        textBox.appendChild(document.createTextNode(event.delta));
        break;
      case 'response.output_item.added': {
        const line = h('li', {}, `${event.item.type}${event.item.name ? ` ${event.item.server_label ? `${event.item.server_label}.` : ''}${event.item.name}` : ''} … (started ${elapsed()})`);
        lines.set(event.output_index, line);
        items.appendChild(line);
        break;
      }
      case 'response.output_item.done': {
        const line = lines.get(event.output_index) || h('li');
        clear(line);
        const item = event.item;
        append(line, `${item.type}${item.name ? ` ${item.server_label ? `${item.server_label}.` : ''}${item.name}` : ''}`, item.status ? ` (${item.status})` : '', item.error ? ` — ${item.error}` : '', ` · done ${elapsed()}`);
        if (!line.parentNode) items.appendChild(line);
        break;
      }
      case 'error':
        append(done, note(event.message || 'stream error', 'error'));
        break;
      default:
        if (TERMINAL.includes(event.type)) {
          clear(status);
          append(status, badge(event.response.status), ` after ${elapsed()}`);
          if (event.response.error) append(done, note(event.response.error.message, 'error'));
          append(done, h('p', {}, h('a', { href: `#/trace/${encodeURIComponent(event.response.id)}`, id: 'open-trace' }, 'Open the trace')));
        }
    }
  };
  return { panel, onEvent, id: () => responseId };
}

/**
 * Follows a response's stream from `after` on, resuming where it stopped if the connection drops.
 * @param {string} id
 * @param {(event: any) => void} onEvent
 * @param {AbortSignal} signal
 */
async function follow(id, onEvent, signal) {
  let last;
  let ended = false;
  for (let attempt = 0; !ended && attempt < 5 && !signal.aborted; attempt += 1) {
    await stream(
      'GET',
      `/v1/responses/${encodeURIComponent(id)}${query({ stream: 'true', starting_after: last })}`,
      undefined,
      (event) => {
        if (typeof event.sequence_number === 'number') last = event.sequence_number;
        if (TERMINAL.includes(event.type)) ended = true;
        onEvent(event);
      },
      signal,
    );
  }
}

/** @param {HTMLElement} view @param {string} id */
export async function livePage(view, id) {
  stopLive();
  const controller = new AbortController();
  current = controller;
  const live = livePanel();
  append(view, h('h1', {}, 'Live ', h('code', {}, id)), live.panel);
  try {
    await follow(id, live.onEvent, controller.signal);
  } catch (err) {
    if (!controller.signal.aborted) append(view, note(err.message, 'error'));
  }
}
