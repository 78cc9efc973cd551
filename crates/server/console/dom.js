// Small DOM helpers. Data is only ever set as text nodes or attributes, never parsed as HTML.

/**
 * Builds an element.
 * @param {string} tag
 * @param {Record<string, any>} [attrs] attributes; `on*` functions become listeners, `class` the class.
 * @param {...(Node|string|number|null|undefined|false)} children
 * @returns {HTMLElement}
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      el.addEventListener(name.slice(2), value);
    } else if (name === 'value') {
      /** @type {any} */ (el).value = value;
    } else if (name === 'checked') {
      /** @type {any} */ (el).checked = Boolean(value);
    } else {
      el.setAttribute(name, value === true ? '' : String(value));
    }
  }
  append(el, ...children);
  return el;
}

/**
 * Appends children (strings as text nodes).
 * @param {Node} el
 * @param {...(Node|string|number|null|undefined|false)} children
 */
export function append(el, ...children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** @param {Node} el */
export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
}

/**
 * A Unix time (seconds) as local date and time.
 * @param {number|null|undefined} seconds
 */
export function time(seconds) {
  if (seconds === null || seconds === undefined) return '—';
  return new Date(seconds * 1000).toLocaleString();
}

/** A JSON value pretty-printed (text of arguments is parsed first when it is JSON). */
export function pretty(value) {
  if (typeof value === 'string') {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2);
}

/** A status badge. @param {string} status */
export function badge(status) {
  return h('span', { class: `badge badge-${String(status).replace(/[^a-z_]/g, '')}` }, status);
}

/**
 * A message line (errors in red).
 * @param {string} text
 * @param {'error'|'ok'|'info'} [kind]
 */
export function note(text, kind = 'info') {
  return h('p', { class: `note note-${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}

/** A table from rows. @param {string[]} headings @param {Node[][]|any[][]} rows */
export function table(headings, rows) {
  return h(
    'table',
    {},
    h('thead', {}, h('tr', {}, ...headings.map((title) => h('th', {}, title)))),
    h('tbody', {}, ...rows.map((row) => h('tr', {}, ...row.map((cell) => h('td', {}, cell))))),
  );
}

/** A labelled form field. @param {string} label @param {HTMLElement} input @param {string} [hint] */
export function field(label, input, hint) {
  return h('label', { class: 'field' }, h('span', { class: 'label' }, label), input, hint ? h('small', {}, hint) : null);
}
