// The API client: the key lives in this tab's sessionStorage only and goes in the
// Authorization header of each request (never a cookie). The console uses the same public and
// admin API as every other client.

const KEY = 'agentd.console.key';

export function key() {
  return sessionStorage.getItem(KEY);
}

/** @param {string} value */
export function setKey(value) {
  sessionStorage.setItem(KEY, value);
}

export function forgetKey() {
  sessionStorage.removeItem(KEY);
}

/** An error answer of the API: its status and the envelope's message and param. */
export class ApiError extends Error {
  /** @param {number} status @param {string} message @param {string|undefined} param */
  constructor(status, message, param) {
    super(message);
    this.status = status;
    this.param = param;
  }
}

function headers(json) {
  /** @type {Record<string, string>} */
  const out = {};
  const k = key();
  if (k) out.Authorization = `Bearer ${k}`;
  if (json) out['Content-Type'] = 'application/json';
  return out;
}

async function failure(response) {
  let message = `${response.status} ${response.statusText}`;
  let param;
  try {
    const body = await response.json();
    if (body && body.error) {
      message = body.error.message || message;
      param = body.error.param || undefined;
    }
  } catch {
    // not JSON: keep the status line
  }
  return new ApiError(response.status, message, param);
}

/**
 * One JSON request.
 * @param {string} method
 * @param {string} path
 * @param {any} [body]
 */
export async function call(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit',
    cache: 'no-store',
  });
  if (!response.ok) throw await failure(response);
  return response.json();
}

/** @param {Record<string, any>} params */
export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== '') search.set(name, String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

/**
 * Reads a server-sent event stream, calling `onEvent` with each frame's JSON.
 * @param {Response} response
 * @param {(event: any) => void} onEvent
 */
async function readEvents(response, onEvent) {
  if (!response.body) return;
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
      const data = frame
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n');
      if (!data || data === '[DONE]') continue;
      try {
        onEvent(JSON.parse(data));
      } catch {
        // a frame that is not JSON: skip it
      }
    }
  }
}

/**
 * Streams a request (POST with `stream: true`, or GET `?stream=true`).
 * @param {string} method
 * @param {string} path
 * @param {any} body
 * @param {(event: any) => void} onEvent
 * @param {AbortSignal} [signal]
 */
export async function stream(method, path, body, onEvent, signal) {
  const response = await fetch(path, {
    method,
    headers: { ...headers(body !== undefined), Accept: 'text/event-stream' },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'omit',
    cache: 'no-store',
    signal,
  });
  if (!response.ok) throw await failure(response);
  await readEvents(response, onEvent);
}
