// Connectors: the list (status and last check), create (with a test of the draft before
// saving), edit with write-only secret fields ("set" badge, replace, clear), test, tools with
// read_only, rotate, delete and the audit history. Secret values are never shown: the API
// answers only `{set, fingerprint}` for them, and the inputs start empty.

import { call } from './api.js';
import { append, badge, clear, field, h, note, table, time } from './dom.js';

/** @param {HTMLElement} view */
export async function connectorsPage(view) {
  append(view, h('h1', {}, 'Connectors'));
  const list = await call('GET', '/v1/admin/connectors');
  append(
    view,
    h(
      'section',
      { class: 'card' },
      list.data.length === 0
        ? h('p', {}, 'No connector yet.')
        : table(
            ['Label', 'Id', 'Server', 'Status', 'Last check', 'Enabled'],
            list.data.map((c) => [
              h('a', { href: `#/connectors/${encodeURIComponent(c.id)}` }, c.server_label),
              h('code', {}, c.id),
              c.server_url,
              badge(c.status),
              time(c.last_checked_at),
              c.enabled ? 'yes' : 'no',
            ]),
          ),
    ),
  );
  const box = h('section', { class: 'card', id: 'new-connector' }, h('h2', {}, 'New connector'));
  append(view, box);
  connectorForm(box, null);
}

/** The detail page of one connector. @param {HTMLElement} view @param {string} id */
export async function connectorPage(view, id) {
  const path = `/v1/admin/connectors/${encodeURIComponent(id)}`;
  const connector = await call('GET', path);
  append(
    view,
    h('p', {}, h('a', { href: '#/connectors' }, '← Connectors')),
    h('h1', {}, connector.server_label, ' ', h('span', { id: 'connector-status' }, badge(connector.status))),
    h(
      'p',
      { class: 'hint' },
      `Last check: ${time(connector.last_checked_at)}`,
      connector.last_error ? ` — ${connector.last_error}` : '',
    ),
  );
  const edit = h('section', { class: 'card', id: 'edit-connector' }, h('h2', {}, 'Settings'));
  const actions = h('section', { class: 'card', id: 'connector-actions' }, h('h2', {}, 'Test, tools, rotate'));
  const audit = h('section', { class: 'card', id: 'connector-audit' }, h('h2', {}, 'Audit history'));
  append(view, edit, actions, audit);
  connectorForm(edit, connector);

  const output = h('div', { id: 'connector-output' });
  const rotateInput = h('input', { type: 'password', name: 'rotate-authorization', autocomplete: 'off', placeholder: 'new bearer token' });
  append(
    actions,
    h(
      'div',
      { class: 'buttons' },
      h(
        'button',
        {
          type: 'button',
          id: 'test-saved',
          onclick: () =>
            run(output, async () => {
              const result = await call('POST', `${path}/test`);
              const status = /** @type {HTMLElement} */ (document.getElementById('connector-status'));
              clear(status);
              append(status, badge(result.ok ? 'ok' : 'error'));
              return testResult(result);
            }),
        },
        'Test connection',
      ),
      h('button', { type: 'button', id: 'show-tools', onclick: () => run(output, async () => toolTable((await call('GET', `${path}/tools`)).data)) }, 'Tools'),
      h(
        'button',
        {
          type: 'button',
          class: 'danger',
          id: 'delete-connector',
          onclick: async () => {
            if (!confirm(`Delete connector ${connector.server_label}? Requests naming it will be refused.`)) return;
            await run(output, async () => {
              await call('DELETE', path);
              location.hash = '#/connectors';
              return note('Deleted.', 'ok');
            });
          },
        },
        'Delete',
      ),
    ),
    h(
      'form',
      {
        class: 'inline',
        id: 'rotate',
        onsubmit: async (event) => {
          event.preventDefault();
          const value = /** @type {HTMLInputElement} */ (rotateInput).value;
          /** @type {HTMLInputElement} */ (rotateInput).value = '';
          await run(output, async () => {
            await call('POST', `${path}/rotate`, { authorization: value });
            return note('Credentials rotated: runs from now on use the new ones.', 'ok');
          });
        },
      },
      field('Rotate authorization', rotateInput, 'Replaces the bearer token; the old one is forgotten.'),
      h('button', { type: 'submit' }, 'Rotate'),
    ),
    output,
  );

  const events = await call('GET', `${path}/events`);
  append(
    audit,
    table(
      ['When', 'What', 'Key', 'Detail'],
      events.data.map((e) => [time(e.created_at), e.kind, e.key_id || '—', h('code', {}, JSON.stringify(e.detail))]),
    ),
  );
}

/** Runs an action, showing its result (a node) or its error in `output`. */
async function run(output, action) {
  clear(output);
  append(output, note('Working…'));
  try {
    const result = await action();
    clear(output);
    append(output, result);
  } catch (err) {
    clear(output);
    append(output, note(err.message, 'error'));
  }
}

/** A test's outcome. */
function testResult(result) {
  const box = h('div', { class: `test-result ${result.ok ? 'ok' : 'failed'}`, id: 'test-result' });
  append(
    box,
    note(
      result.ok
        ? `Connection OK (${result.latency_ms} ms)${result.server_info ? `: ${result.server_info.name} ${result.server_info.version}` : ''}`
        : `Connection failed: ${result.error || 'unknown error'}`,
      result.ok ? 'ok' : 'error',
    ),
  );
  if (result.tools) append(box, toolTable(result.tools));
  return box;
}

/** The tools a server offers, with read_only. */
function toolTable(tools) {
  return table(
    ['Tool', 'Description', 'read_only'],
    tools.map((t) => [h('code', {}, t.name), t.description || '', t.read_only ? 'yes' : 'no']),
  );
}

/** A secret field: the "set" badge, a replace input and a clear box. */
function secretField(label, name, state) {
  const input = h('input', { type: 'password', name, autocomplete: 'off', placeholder: state && state.set ? 'leave empty to keep' : '' });
  const clearBox = h('input', { type: 'checkbox', name: `${name}-clear` });
  const status = state
    ? h('span', { class: `secret-state ${state.set ? 'set' : 'unset'}`, 'data-secret': name }, state.set ? 'set' : 'not set')
    : null;
  const wrap = h(
    'div',
    { class: 'field secret' },
    h('span', { class: 'label' }, label, ' ', status),
    input,
    state && state.set ? h('label', { class: 'check' }, clearBox, ' clear') : null,
  );
  return { wrap, input: /** @type {HTMLInputElement} */ (input), clear: /** @type {HTMLInputElement} */ (clearBox) };
}

/**
 * The create form (connector null) or the edit form.
 * @param {HTMLElement} box
 * @param {any} connector
 */
function connectorForm(box, connector) {
  const creating = connector === null;
  const v = connector || {};
  const input = (name, value, attrs = {}) => h('input', { name, value: value ?? '', ...attrs });
  const label = input('server_label', v.server_label, { required: true, placeholder: 'files' });
  const url = input('server_url', v.server_url, { required: true, type: 'url', placeholder: 'https://mcp.example.com/mcp' });
  const id = creating ? input('id', '', { placeholder: 'connector_… (optional)' }) : null;
  const transport = h(
    'select',
    { name: 'transport' },
    ...['auto', 'streamable_http', 'sse'].map((t) => h('option', { value: t, selected: (v.transport || 'auto') === t }, t)),
  );
  const description = input('description', v.description);
  const allowed = input('allowed_tools', (v.allowed_tools || []).join(', '), { placeholder: 'all tools' });
  const custom = v.require_approval && typeof v.require_approval === 'object';
  const approval = h(
    'select',
    { name: 'require_approval' },
    h('option', { value: '' }, '(default)'),
    h('option', { value: 'always', selected: v.require_approval === 'always' }, 'always'),
    h('option', { value: 'never', selected: v.require_approval === 'never' }, 'never'),
    custom ? h('option', { value: 'custom', selected: true }, `filters: ${JSON.stringify(v.require_approval)}`) : null,
  );
  const enabled = h('input', { type: 'checkbox', name: 'enabled', checked: creating || v.enabled });
  const deferred = h('input', { type: 'checkbox', name: 'defer_loading', checked: creating || v.defer_loading });
  const auth = secretField('Authorization (bearer token)', 'authorization', creating ? null : v.authorization);
  const headerNames = Object.keys(v.headers || {});
  const headerName = input('header_name', '', { placeholder: 'X-Api-Key' });
  const headerValue = h('input', { type: 'password', name: 'header_value', autocomplete: 'off' });
  const clearHeaders = h('input', { type: 'checkbox', name: 'headers-clear' });
  const output = h('div', { class: 'form-output' });

  const fields = [
    id ? field('Id', id) : null,
    field('Label', label, 'Tools are named label__tool for the model'),
    field('Server URL', url),
    field('Transport', transport),
    field('Description', description),
    field('Allowed tools', allowed, 'Comma-separated; empty for all'),
    field('Require approval', approval),
    h('label', { class: 'check' }, enabled, ' enabled'),
    h('label', { class: 'check' }, deferred, ' defer loading (the model finds the tools through tool search)'),
    auth.wrap,
    h(
      'div',
      { class: 'field secret' },
      h(
        'span',
        { class: 'label' },
        'Headers ',
        ...headerNames.map((name) => h('span', { class: 'secret-state set' }, `${name}: set`)),
      ),
      h('div', { class: 'pair' }, headerName, headerValue),
      h('small', {}, headerNames.length ? 'A header given here replaces all saved headers.' : 'Optional extra header (write-only value).'),
      headerNames.length ? h('label', { class: 'check' }, clearHeaders, ' clear headers') : null,
    ),
  ];

  /** The body from the form: for an edit, only what changed. */
  const body = () => {
    /** @type {Record<string, any>} */
    const out = {};
    const text = (el) => /** @type {HTMLInputElement} */ (el).value.trim();
    const set = (name, value, old) => {
      if (creating ? value !== '' && value !== undefined : value !== (old ?? '')) out[name] = value === '' ? null : value;
    };
    if (id && text(id)) out.id = text(id);
    set('server_label', text(label), v.server_label);
    set('server_url', text(url), v.server_url);
    set('transport', text(transport), v.transport);
    set('description', text(description), v.description);
    const tools = text(allowed)
      .split(',')
      .map((t) => t.trim())
      .filter(Boolean);
    if (creating ? tools.length : tools.join(',') !== (v.allowed_tools || []).join(',')) out.allowed_tools = tools.length ? tools : null;
    const mode = text(approval);
    if (mode !== 'custom') {
      const old = typeof v.require_approval === 'string' ? v.require_approval : '';
      if (creating ? mode : mode !== old) out.require_approval = mode || null;
    }
    const on = /** @type {HTMLInputElement} */ (enabled).checked;
    if (creating ? !on : on !== v.enabled) out.enabled = on;
    const defer = /** @type {HTMLInputElement} */ (deferred).checked;
    if (creating ? !defer : defer !== v.defer_loading) out.defer_loading = defer;
    if (auth.clear.checked) out.authorization = null;
    else if (auth.input.value) out.authorization = auth.input.value;
    if (/** @type {HTMLInputElement} */ (clearHeaders).checked) out.headers = null;
    else if (text(headerName)) out.headers = { [text(headerName)]: /** @type {HTMLInputElement} */ (headerValue).value };
    if (creating) {
      for (const name of Object.keys(out)) if (out[name] === null) delete out[name];
    }
    return out;
  };

  const form = h(
    'form',
    { class: 'connector-form', id: creating ? 'connector-create' : 'connector-edit' },
    ...fields,
    h(
      'div',
      { class: 'buttons' },
      creating
        ? h(
            'button',
            {
              type: 'button',
              id: 'test-draft',
              onclick: () => run(output, async () => testResult(await call('POST', '/v1/admin/connectors/test', body()))),
            },
            'Test before saving',
          )
        : null,
      h('button', { type: 'submit', id: creating ? 'save-connector' : 'update-connector' }, creating ? 'Save connector' : 'Save changes'),
    ),
    output,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    run(output, async () => {
      const saved = creating
        ? await call('POST', '/v1/admin/connectors', body())
        : await call('PATCH', `/v1/admin/connectors/${encodeURIComponent(v.id)}`, body());
      auth.input.value = '';
      /** @type {HTMLInputElement} */ (headerValue).value = '';
      if (creating) {
        location.hash = `#/connectors/${encodeURIComponent(saved.id)}`;
      } else {
        // Show the saved state (badges, status) again.
        window.dispatchEvent(new HashChangeEvent('hashchange'));
      }
      return note('Saved.', 'ok');
    });
  });
  append(box, form);
}
