// The console's entry point: sign-in, the role, and the hash router (#/page/...).

import { ApiError, call, forgetKey, key, setKey } from './api.js';
import { approvalsPage } from './approvals.js';
import { connectorPage, connectorsPage } from './connectors.js';
import { clear, field, h, note } from './dom.js';
import { keysPage } from './keys.js';
import { livePage, stopLive } from './live.js';
import { responsesPage } from './responses.js';
import { tracePage } from './trace.js';

const main = /** @type {HTMLElement} */ (document.getElementById('main'));
const nav = /** @type {HTMLElement} */ (document.getElementById('nav'));
const who = /** @type {HTMLElement} */ (document.getElementById('who'));
const signout = /** @type {HTMLElement} */ (document.getElementById('signout'));

/** What the key may do: `admin` (projects, keys, connectors) or `member` (runs only). */
let role = 'member';

function signInPage(message) {
  clear(main);
  nav.hidden = true;
  signout.hidden = true;
  who.textContent = '';
  const input = h('input', {
    type: 'password',
    id: 'signin-key',
    name: 'key',
    autocomplete: 'off',
    required: true,
    placeholder: 'agentd API key',
  });
  const form = h(
    'form',
    { class: 'card signin', id: 'signin' },
    h('h1', {}, 'Sign in'),
    h('p', {}, 'Use an API key of your project. It stays in this browser tab only (session storage) and is sent as a bearer token with each request.'),
    field('API key', input),
    h('button', { type: 'submit' }, 'Sign in'),
    message ? note(message, 'error') : null,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    setKey(/** @type {HTMLInputElement} */ (input).value.trim());
    const problem = await checkKey();
    if (problem) {
      forgetKey();
      signInPage(problem);
    } else {
      if (!location.hash || location.hash === '#/') location.hash = '#/responses';
      route();
    }
  });
  main.appendChild(form);
  input.focus();
}

/** Checks the key and learns its role; returns why it cannot sign in, if it cannot. */
async function checkKey() {
  try {
    await call('GET', '/v1/admin/responses?limit=1');
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return 'This key is not valid.';
    return `Cannot sign in: ${err.message}`;
  }
  try {
    await call('GET', '/v1/admin/keys');
    role = 'admin';
  } catch (err) {
    role = 'member';
  }
  return null;
}

function showChrome(page) {
  nav.hidden = false;
  signout.hidden = false;
  who.textContent = role === 'admin' ? 'admin key' : 'member key';
  for (const link of nav.querySelectorAll('a')) {
    const admin = link.hasAttribute('data-admin');
    /** @type {HTMLElement} */ (link).hidden = admin && role !== 'admin';
    link.classList.toggle('active', link.getAttribute('data-page') === page);
  }
}

let signedIn = false;

async function route() {
  if (!key()) {
    signedIn = false;
    signInPage();
    return;
  }
  if (!signedIn) {
    const problem = await checkKey();
    if (problem) {
      forgetKey();
      signInPage(problem);
      return;
    }
    signedIn = true;
  }
  stopLive();
  const [page, id] = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  showChrome(page || 'responses');
  clear(main);
  const view = h('div', { class: 'page', id: `page-${page || 'responses'}` });
  main.appendChild(view);
  try {
    switch (page) {
      case 'keys':
        await keysPage(view);
        break;
      case 'connectors':
        if (id) await connectorPage(view, id);
        else await connectorsPage(view);
        break;
      case 'approvals':
        await approvalsPage(view);
        break;
      case 'trace':
        await tracePage(view, id);
        break;
      case 'live':
        await livePage(view, id);
        break;
      default:
        await responsesPage(view);
    }
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) {
      forgetKey();
      signedIn = false;
      signInPage('The key is no longer valid.');
      return;
    }
    view.appendChild(note(err.message, 'error'));
  }
}

signout.addEventListener('click', () => {
  forgetKey();
  signedIn = false;
  // The hash is cleared without a `hashchange` event: that event's `route()` came after this
  // sign-in page and drew a second one, sometimes while a key was being typed into the first.
  history.replaceState(null, '', location.pathname + location.search);
  signInPage();
});
window.addEventListener('hashchange', route);
route();
