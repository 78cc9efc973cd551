// Projects and API keys: list, create (the key shown once), revoke.

import { call } from './api.js';
import { append, clear, field, h, note, table, time } from './dom.js';

/** @param {HTMLElement} view */
export async function keysPage(view) {
  append(view, h('h1', {}, 'Projects & keys'));
  const projects = h('section', { class: 'card', id: 'projects' });
  const keys = h('section', { class: 'card', id: 'keys' });
  append(view, projects, keys);
  await renderProjects(projects);
  await renderKeys(keys);
}

/** @param {HTMLElement} box */
async function renderProjects(box) {
  clear(box);
  append(box, h('h2', {}, 'Projects'));
  const list = await call('GET', '/v1/admin/projects');
  append(
    box,
    table(
      ['Name', 'Id', 'Created'],
      list.data.map((p) => [p.name, h('code', {}, p.id), time(p.created_at)]),
    ),
  );
  const name = h('input', { name: 'project-name', required: true, placeholder: 'new project name' });
  const status = h('div');
  const form = h('form', { class: 'inline' }, field('Name', name), h('button', { type: 'submit' }, 'Create project'), status);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      await call('POST', '/v1/admin/projects', { name: /** @type {HTMLInputElement} */ (name).value });
      await renderProjects(box);
    } catch (err) {
      clear(status);
      append(status, note(err.message, 'error'));
    }
  });
  append(box, h('p', { class: 'hint' }, 'Creating projects needs a server-owner key.'), form);
}

/** @param {HTMLElement} box */
async function renderKeys(box, created) {
  clear(box);
  append(box, h('h2', {}, 'API keys of this project'));
  if (created) {
    // The key itself is in this answer only: shown once, never stored by the console.
    append(
      box,
      h(
        'div',
        { class: 'secret-once', id: 'new-key' },
        h('strong', {}, 'New key (copy it now, it is shown only once):'),
        h('code', { id: 'new-key-value' }, created.key),
      ),
    );
  }
  const list = await call('GET', '/v1/admin/keys');
  append(
    box,
    table(
      ['Name', 'Prefix', 'Role', 'Created', 'Last used', ''],
      list.data.map((k) => [
        k.name || '—',
        h('code', {}, k.prefix ? `${k.prefix}…` : '—'),
        k.role,
        time(k.created_at),
        time(k.last_used_at),
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            'data-revoke': k.id,
            onclick: async () => {
              if (!confirm(`Revoke key ${k.name || k.id}? Requests with it will be refused.`)) return;
              try {
                await call('DELETE', `/v1/admin/keys/${encodeURIComponent(k.id)}`);
                await renderKeys(box);
              } catch (err) {
                append(box, note(err.message, 'error'));
              }
            },
          },
          'Revoke',
        ),
      ]),
    ),
  );
  const name = h('input', { name: 'key-name', placeholder: 'name (optional)' });
  const role = h(
    'select',
    { name: 'key-role' },
    h('option', { value: 'admin' }, 'admin'),
    h('option', { value: 'member' }, 'member'),
    h('option', { value: 'owner' }, 'owner'),
  );
  const status = h('div');
  const form = h('form', { class: 'inline', id: 'create-key' }, field('Name', name), field('Role', role), h('button', { type: 'submit' }, 'Create key'), status);
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      const body = { role: /** @type {HTMLSelectElement} */ (role).value };
      const value = /** @type {HTMLInputElement} */ (name).value.trim();
      if (value) body.name = value;
      const createdKey = await call('POST', '/v1/admin/keys', body);
      await renderKeys(box, createdKey);
    } catch (err) {
      clear(status);
      append(status, note(err.message, 'error'));
    }
  });
  append(box, form);
}
