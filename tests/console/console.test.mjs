// The web console in a real browser: Debian's Chromium driven by playwright-core against a real
// agentd process, the scripted fake model (fake-provider) and a real MCP fixture server
// (tests/mcp/fixtures.py, `annotated` kind, behind a bearer token). Run by run.sh, which builds
// the binaries and passes their paths.
//
// Covers: sign-in (a wrong key refused, the page under its Content-Security-Policy with no
// violation), creating a key (the secret shown once), creating a connector after testing the
// draft (write-only token: "set" badge, never rendered), its tools with read_only, a run that
// needs approval approved in the console (the continuation really calls the tool), the trace
// of the result with its model turns (times and tokens) and those of the response it continues,
// two approval requests of one response answered together (one approved, one denied, in one
// continuation). Screenshots go to $AGENTD_TEST_ARTIFACTS/console (target/test-artifacts/
// console by default); AGENTD_UPDATE_SCREENSHOT=1 also writes docs/console.png.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const artifacts = path.join(process.env.AGENTD_TEST_ARTIFACTS || path.join(repo, 'target', 'test-artifacts'), 'console');
const AGENTD = process.env.AGENTD_BIN || path.join(repo, 'target', 'debug', 'agentd');
const FAKE = process.env.FAKE_PROVIDER_BIN || path.join(repo, 'target', 'debug', 'fake-provider');
const PYTHON = path.join(repo, 'tests', 'mcp', '.venv', 'bin', 'python');
const FIXTURES = path.join(repo, 'tests', 'mcp', 'fixtures.py');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

// Secrets handed to agentd: listed in scripts/test-secrets, so the scan at the end of
// scripts/test fails if one of them is in a log or store file left here.
const PROVIDER_KEY = 'sk-fake-provider-secret-for-console';
const MCP_TOKEN = 'mcp-token-console-suite-4e8a1f';
const MODEL = 'openai/gpt-fake';
const TIMEOUT_MS = 30_000;

/** @type {import('node:child_process').ChildProcess[]} */
const children = [];
let fakeControl = '';
let agentdUrl = '';
let ownerKey = '';
let mcpUrl = '';
let mcpLog = '';
/** @type {import('playwright-core').Browser} */
let browser;
/** @type {import('playwright-core').Page} */
let page;
/** Content-Security-Policy violations and script errors the page reported. */
const pageErrors = [];

function start(name, argv, env) {
  const out = fs.openSync(path.join(artifacts, `${name}.stdout`), 'w');
  const err = fs.openSync(path.join(artifacts, `${name}.stderr`), 'w');
  const child = spawn(argv[0], argv.slice(1), { env, stdio: ['ignore', 'pipe', err], cwd: artifacts });
  children.push(child);
  const lines = [];
  const waiters = [];
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    fs.writeSync(out, `${line}\n`);
    lines.push(line);
    for (const w of waiters.splice(0)) w();
  });
  /** Waits for a stdout line matching `pattern`; its first group. */
  const line = (pattern) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${name}: no line /${pattern}/ in 60 s`)), 60_000);
      const look = () => {
        for (const l of lines) {
          const m = l.match(pattern);
          if (m) {
            clearTimeout(timer);
            resolve(m[1]);
            return;
          }
        }
        if (child.exitCode !== null) {
          clearTimeout(timer);
          reject(new Error(`${name} exited ${child.exitCode}`));
          return;
        }
        waiters.push(look);
      };
      look();
    });
  return { child, line };
}

function agentdEnv(fakeBase) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!k.endsWith('_API_KEY') && !k.endsWith('_BASE_URL') && !k.startsWith('AGENTD_')) env[k] = v;
  }
  return {
    ...env,
    OPENAI_API_KEY: PROVIDER_KEY,
    OPENAI_BASE_URL: fakeBase,
    AGENTD_ALLOW_PRIVATE_NETWORKS: '127.0.0.0/8',
    NO_PROXY: '127.0.0.1,localhost',
    no_proxy: '127.0.0.1,localhost',
    NO_COLOR: '1',
    RUST_LOG: 'debug',
  };
}

async function api(method, urlPath, body, key = ownerKey) {
  const response = await fetch(`${agentdUrl}${urlPath}`, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: response.status, body: await response.json() };
}

async function script(...replies) {
  const response = await fetch(`${fakeControl}/script`, { method: 'POST', body: JSON.stringify(replies), headers: { 'Content-Type': 'application/json' } });
  assert.equal(response.status, 200, await response.text());
}

/** The tool calls the MCP fixture logged, in order. */
function mcpCalls() {
  return fs
    .readFileSync(mcpLog, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
    .filter((event) => event.event === 'call');
}

async function shot(name) {
  await page.screenshot({ path: path.join(artifacts, `${name}.png`), fullPage: true });
}

before(async () => {
  fs.rmSync(artifacts, { recursive: true, force: true });
  fs.mkdirSync(artifacts, { recursive: true });
  const fake = start('fake-provider', [FAKE], process.env);
  const fakeBase = await fake.line(/^base_url (\S+)$/);
  fakeControl = await fake.line(/^control_url (\S+)$/);

  const portFile = path.join(artifacts, 'mcp-annotated-0.port');
  mcpLog = path.join(artifacts, 'mcp-annotated-0.jsonl');
  start('mcp-annotated-0', [PYTHON, FIXTURES, 'annotated', '--transport', 'streamable-http', '--port-file', portFile, '--log', mcpLog, '--token', MCP_TOKEN], process.env);
  const deadline = Date.now() + 60_000;
  while (!fs.existsSync(portFile)) {
    assert.ok(Date.now() < deadline, 'the MCP fixture did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  mcpUrl = `http://127.0.0.1:${fs.readFileSync(portFile, 'utf8').trim()}/mcp`;

  const dataDir = path.join(artifacts, 'agentd-data');
  const env = agentdEnv(fakeBase);
  const created = spawnSync(AGENTD, ['keys', 'create', '--data-dir', dataDir, '--role', 'owner', '--name', 'console-test'], { env, encoding: 'utf8' });
  assert.equal(created.status, 0, created.stderr);
  ownerKey = created.stdout.trim().split('\n').pop();
  const agentd = start('agentd', [AGENTD, 'serve', '--listen', '127.0.0.1:0', '--data-dir', dataDir], env);
  agentdUrl = `http://${await agentd.line(/^listening on http:\/\/(\S+)$/)}`;

  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
  context.setDefaultTimeout(TIMEOUT_MS);
  page = await context.newPage();
  page.on('console', (message) => {
    // Error answers the console handles (a wrong key's 401, a member key's 403) are logged by
    // the browser as failed loads: not the page's fault.
    if (message.type() === 'error' && !message.text().startsWith('Failed to load resource')) pageErrors.push(message.text());
  });
  page.on('pageerror', (error) => pageErrors.push(String(error)));
});

after(async () => {
  if (browser) await browser.close();
  for (const child of children.reverse()) child.kill('SIGTERM');
});

test('the console page is served with a strict Content-Security-Policy', async () => {
  const response = await page.goto(`${agentdUrl}/console`);
  assert.equal(response.status(), 200);
  const csp = response.headers()['content-security-policy'];
  assert.match(csp, /default-src 'self'/);
  assert.match(csp, /frame-ancestors 'none'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  await page.locator('#signin').waitFor();
});

test('sign-in refuses a wrong key and accepts an owner key', async () => {
  await page.fill('#signin-key', 'not-a-key');
  await page.click('#signin button[type=submit]');
  await page.getByText('This key is not valid.').waitFor();
  await page.fill('#signin-key', ownerKey);
  await page.click('#signin button[type=submit]');
  await page.locator('#page-responses').waitFor();
  assert.equal(await page.locator('#nav a[data-page=keys]').isVisible(), true, 'an owner key sees the administration');
  // The key lives in the tab's session storage only: no cookie.
  assert.deepEqual(await page.context().cookies(), []);
  assert.equal(await page.evaluate(() => localStorage.length), 0);
});

let memberKey = '';

test('creating a key shows its secret once', async () => {
  await page.click('#nav a[data-page=keys]');
  await page.locator('#create-key').waitFor();
  await page.fill('#create-key input[name=key-name]', 'ci-bot');
  await page.selectOption('#create-key select[name=key-role]', 'member');
  await page.click('#create-key button[type=submit]');
  memberKey = (await page.locator('#new-key-value').textContent()).trim();
  assert.ok(memberKey.length > 20, memberKey);
  await page.getByRole('cell', { name: 'ci-bot' }).waitFor();
  await shot('keys');
  // It works, as a member key of the project.
  assert.equal((await api('GET', '/v1/admin/responses', undefined, memberKey)).status, 200);
  assert.equal((await api('GET', '/v1/admin/keys', undefined, memberKey)).status, 403);
  // Shown once: after a reload of the page it is gone, the list shows only its prefix.
  await page.click('#nav a[data-page=responses]');
  await page.click('#nav a[data-page=keys]');
  await page.getByRole('cell', { name: 'ci-bot' }).waitFor();
  assert.equal(await page.locator('#new-key').count(), 0);
  assert.ok(!(await page.content()).includes(memberKey), 'the key is never shown again');
});

let connectorId = '';

test('a connector is tested as a draft, saved with a write-only token, tested and listed', async () => {
  await page.click('#nav a[data-page=connectors]');
  const form = page.locator('#connector-create');
  await form.waitFor();
  await form.locator('input[name=server_label]').fill('files');
  await form.locator('input[name=server_url]').fill(mcpUrl);
  await form.locator('select[name=require_approval]').selectOption('always');
  // Without the token the server refuses: the draft test says so.
  await page.click('#test-draft');
  await page.locator('#test-result.failed').waitFor();
  await form.locator('input[name=authorization]').fill(MCP_TOKEN);
  await page.click('#test-draft');
  await page.locator('#test-result.ok').waitFor();
  await page.locator('#test-result').getByText('delete_file').waitFor();
  await shot('connector-draft');
  await page.click('#save-connector');
  await page.waitForURL(/#\/connectors\/connector_/);
  connectorId = decodeURIComponent(page.url().split('#/connectors/')[1]);
  await page.locator('#edit-connector [data-secret=authorization]').getByText('set', { exact: true }).waitFor();
  // The token is write-only: never in the page, the input starts empty.
  assert.equal(await page.locator('#connector-edit input[name=authorization]').inputValue(), '');
  assert.ok(!(await page.content()).includes(MCP_TOKEN));
  assert.equal(await page.locator('#connector-status').textContent(), 'untested');
  await page.click('#test-saved');
  await page.locator('#test-result.ok').waitFor();
  assert.equal(await page.locator('#connector-status').textContent(), 'ok');
  await page.click('#show-tools');
  const deleteRow = page.locator('#connector-output tr', { hasText: 'delete_file' });
  await deleteRow.waitFor();
  assert.match(await deleteRow.textContent(), /no$/, 'delete_file is not read-only');
  assert.match(await page.locator('#connector-output tr', { hasText: 'list_files' }).textContent(), /yes$/);
  await page.locator('#connector-audit').getByText('created').first().waitFor();
  await shot('connector');
  const saved = await api('GET', `/v1/admin/connectors/${connectorId}`);
  assert.equal(saved.body.status, 'ok');
  assert.equal(saved.body.require_approval, 'always');
});

let firstId = '';

test('a run that needs approval is approved in the console and continues', async () => {
  await script(
    { tool_calls: [['call_search_1', 'tool_search', '{"query":"delete a file"}']], usage: [30, 4], reasoning_tokens: 2 },
    { tool_calls: [['call_delete_1', 'files__delete_file', '{"path":"/tmp/report.txt"}']], usage: [45, 6], cached_tokens: 20 },
    { text: 'The file /tmp/report.txt is deleted.', usage: [120, 12] },
  );
  const first = await api('POST', '/v1/responses', {
    model: MODEL,
    input: 'Delete /tmp/report.txt',
    tools: [{ type: 'connector', id: connectorId }],
  });
  assert.equal(first.status, 200, JSON.stringify(first.body));
  firstId = first.body.id;
  const request = first.body.output.find((item) => item.type === 'mcp_approval_request');
  assert.ok(request, JSON.stringify(first.body.output));

  await page.click('#nav a[data-page=approvals]');
  const group = page.locator(`[data-response="${firstId}"]`);
  const card = group.locator(`[data-approval="${request.id}"]`);
  await card.waitFor();
  assert.match(await card.textContent(), /files\.delete_file/);
  assert.match(await card.textContent(), /\/tmp\/report\.txt/);
  await card.locator('input[name=reason]').fill('cleanup approved by ops');
  await shot('approvals');
  // The response's only request: one click answers it.
  await card.locator('button.approve').click();
  await group.locator('#open-trace').waitFor();
  await group.locator('#live-text').getByText('is deleted').waitFor();
  await shot('approved');
  // The tool really ran on the MCP server, once.
  const calls = mcpCalls();
  assert.deepEqual(calls.map((c) => [c.tool, c.arguments]), [['delete_file', { path: '/tmp/report.txt' }]]);
  // Nothing waits any more.
  assert.deepEqual((await api('GET', '/v1/admin/approvals')).body.data, []);
  await group.locator('#open-trace').click();
  await page.locator('#trace-steps').waitFor();
});

/** The rows of the trace's model turns table, each as its cells' text. */
async function turnRows() {
  const table = page.locator('#turns-table');
  await table.waitFor();
  return table.locator('tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((td) => td.textContent)));
}

test('the trace shows the steps, the tool call, the approval and the chain', async () => {
  const steps = page.locator('#trace-steps');
  const call = steps.locator('li[data-type=mcp_call]');
  await call.waitFor();
  assert.match(await call.textContent(), /files\.delete_file/);
  assert.match(await call.locator('.arguments').textContent(), /"path": "\/tmp\/report\.txt"/);
  assert.match(await call.locator('.tool-output').textContent(), /Deleted \/tmp\/report\.txt/);
  assert.match(await steps.locator('li[data-type=message]').textContent(), /is deleted/);
  const input = page.locator('#trace-input');
  await input.getByText('Approved', { exact: true }).waitFor();
  await input.getByText('Reason: cleanup approved by ops').waitFor();
  await page.locator('#trace-chain').getByRole('link', { name: firstId }).waitFor();
  assert.match(await page.locator('#trace-summary').textContent(), /120 in \/ 12 out/);
  // The continuation's one model turn: # step started duration TTFT model in out reasoning
  // cached status.
  const turns = await turnRows();
  assert.equal(turns.length, 1, JSON.stringify(turns));
  assert.deepEqual([turns[0][0], turns[0][1], turns[0][5], ...turns[0].slice(6)], ['1', '1', MODEL, '120', '12', '0', '0', 'completed']);
  assert.match(turns[0][3], /^\d+\.\d{3} s$/);
  assert.match(turns[0][4], /^\d+\.\d{3} s$/);
  await page.click('#show-events');
  await page.locator('#trace-events td', { hasText: 'response.completed' }).waitFor();
  await shot('trace');
  if (process.env.AGENTD_UPDATE_SCREENSHOT === '1') {
    await page.setViewportSize({ width: 1000, height: 820 });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: path.join(repo, 'docs', 'console.png') });
  }
  // The paused response it continues shows its own two turns (tool search, then the call that
  // waited for approval), each with the tokens the model reported.
  await page.locator('#trace-chain').getByRole('link', { name: firstId }).click();
  await page.locator('h1', { hasText: firstId }).waitFor();
  const paused = await turnRows();
  assert.deepEqual(
    paused.map((row) => [row[1], ...row.slice(6)]),
    [
      ['1', '30', '4', '2', '0', 'completed'],
      ['2', '45', '6', '0', '20', 'completed'],
    ],
  );
  await shot('trace-turns');
});

test('the responses page lists and filters the runs', async () => {
  await page.click('#nav a[data-page=responses]');
  const list = page.locator('#response-list');
  await list.locator('a.response-link').first().waitFor();
  assert.equal(await list.locator('a.response-link').count(), 2);
  await page.fill('#response-filters input[name=model]', 'no-such-model');
  await page.click('#response-filters button[type=submit]');
  await list.getByText('No response matches.').waitFor();
  await page.fill('#response-filters input[name=model]', 'gpt-fake');
  // The first response waits for the approval (`requires_action`); its continuation completed.
  await page.selectOption('#response-filters select[name=status]', 'requires_action');
  await page.click('#response-filters button[type=submit]');
  await list.locator('a.response-link', { hasText: firstId }).waitFor();
  assert.equal(await list.locator('a.response-link').count(), 1);
  await shot('responses');
});

test('two approval requests of one response are answered together in one continuation', async () => {
  await script(
    { tool_calls: [['call_search_2', 'tool_search', '{"query":"delete files"}']] },
    {
      tool_calls: [
        ['call_delete_a', 'files__delete_file', '{"path":"/tmp/a.txt"}'],
        ['call_delete_b', 'files__delete_file', '{"path":"/tmp/b.txt"}'],
      ],
    },
    { text: 'Deleted /tmp/a.txt and kept /tmp/b.txt.' },
  );
  const callsBefore = mcpCalls().length;
  const first = await api('POST', '/v1/responses', { model: MODEL, input: 'Delete /tmp/a.txt and /tmp/b.txt', tools: [{ type: 'connector', id: connectorId }] });
  assert.equal(first.status, 200, JSON.stringify(first.body));
  assert.equal(first.body.status, 'requires_action');
  const requests = first.body.output.filter((item) => item.type === 'mcp_approval_request');
  assert.equal(requests.length, 2, JSON.stringify(first.body.output));
  const byPath = (p) => requests.find((r) => r.arguments.includes(p));

  await page.click('#nav a[data-page=approvals]');
  const group = page.locator(`[data-response="${first.body.id}"]`);
  await group.waitFor();
  assert.equal(await group.locator('[data-approval]').count(), 2);
  const send = group.locator('button.send-decisions');
  // Nothing is sent until every request has a decision.
  const a = group.locator(`[data-approval="${byPath('/tmp/a.txt').id}"]`);
  const b = group.locator(`[data-approval="${byPath('/tmp/b.txt').id}"]`);
  await a.locator('input[name=reason]').fill('a is scratch');
  await a.locator('button.approve').click();
  assert.equal(await send.isDisabled(), true);
  assert.equal((await api('GET', '/v1/admin/approvals')).body.data.length, 2);
  await b.locator('input[name=reason]').fill('b is still needed');
  await b.locator('button.deny').click();
  assert.equal(await b.getAttribute('data-decision'), 'deny');
  await shot('approvals-two');
  await send.click();
  await group.locator('#live-text').getByText('kept /tmp/b.txt').waitFor();
  await group.locator('#live-status').getByText('completed').waitFor();
  // One continuation answered both: only the approved call ran, nothing waits any more.
  assert.deepEqual(mcpCalls().slice(callsBefore).map((c) => [c.tool, c.arguments]), [['delete_file', { path: '/tmp/a.txt' }]]);
  assert.deepEqual((await api('GET', '/v1/admin/approvals')).body.data, []);
  const listed = await api('GET', `/v1/admin/responses?limit=5`);
  const continuations = listed.body.data.filter((r) => r.previous_response_id === first.body.id);
  assert.equal(continuations.length, 1, JSON.stringify(listed.body.data.map((r) => [r.id, r.previous_response_id])));
  const input = await api('GET', `/v1/responses/${continuations[0].id}/input_items?order=asc`);
  assert.deepEqual(
    input.body.data.map((item) => [item.approval_request_id, item.approve, item.reason]),
    [
      [byPath('/tmp/a.txt').id, true, 'a is scratch'],
      [byPath('/tmp/b.txt').id, false, 'b is still needed'],
    ],
  );
});

test('the live view follows a running response to its end', async () => {
  // The model answers slowly (half a second between chunks, about 4 s in all), so the run is
  // still going when the view opens.
  await script({ text: 'Streaming slowly to the live view.', delay_ms: 500 });
  const queued = await api('POST', '/v1/responses', { model: MODEL, input: 'Say something slowly', background: true });
  assert.equal(queued.status, 200, JSON.stringify(queued.body));
  await page.goto(`${agentdUrl}/console#/live/${queued.body.id}`);
  await page.locator('#live-text').getByText('Streaming slowly to the live view.').waitFor();
  await page.locator('#live-status').getByText('completed').waitFor();
  // Each step's times as the page saw the stream: the slow model turn took a while.
  const message = await page.locator('#live-items li', { hasText: 'message' }).textContent();
  const done = Number(message.match(/done \+(\d+\.\d\d) s/)[1]);
  assert.ok(done >= 0.3, message);
  await shot('live');
  await page.click('#open-trace');
  await page.locator('#trace-steps li[data-type=message]').waitFor();
});

test('a member key sees the runs but not the administration', async () => {
  await page.click('#signout');
  await page.fill('#signin-key', memberKey);
  await page.click('#signin button[type=submit]');
  await page.locator('#response-list a.response-link').first().waitFor();
  assert.equal(await page.locator('#nav a[data-page=keys]').isVisible(), false);
  assert.equal(await page.locator('#nav a[data-page=connectors]').isVisible(), false);
  assert.equal(await page.locator('#nav a[data-page=approvals]').isVisible(), true);
});

test('no Content-Security-Policy violation nor script error', () => {
  assert.deepEqual(pageErrors, []);
});
