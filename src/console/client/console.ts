// The delivery console (/console): a clinic signs in with its businessId, user and token and sees its
// requests of interface B, each callback and every attempt, and replays a failed callback. It uses
// the public API only (GET /api/messages, GET /api/messages/{id}, POST /api/messages/{id}/replay).
// The credentials stay in this tab's sessionStorage: gone when the tab closes, never sent elsewhere.
// Bundled by scripts/build-docs.ts; the page allows no inline script, so this file (and its texts,
// strings.ts) is the whole of it.

import { pageStrings } from './strings.js';

interface Credentials {
  businessId: string;
  user: string;
  token: string;
}

interface Attempt {
  attempt: number;
  at: string;
  httpStatus?: number;
  error?: string;
  durationMs?: number;
}

interface Callback {
  webhookId: string;
  name: string;
  url?: string;
  state: string;
  attempts: Attempt[];
  lastError?: string;
  deliveredAt?: string;
}

interface Message {
  queueMessageId: string;
  operation: string;
  state: string;
  localUid?: string;
  clientMessageId?: string;
  emdrId?: string;
  errors?: Array<{ code: string; message: string }>;
  createdAt: string;
  updatedAt: string;
  callbacks: Callback[];
}

const STORAGE_KEY = 'ehr-gateway-console';
const text = pageStrings();
const FILTER_QUERIES = [
  '',
  'callbackState=failed',
  'callbackState=pending',
  'state=received',
  'state=accepted',
  'state=submitted',
  'state=completed',
  'state=rejected',
  'state=failed',
];
const FILTERS = FILTER_QUERIES.map((query, index) => [text.filters[index]!, query] as const);
const PAGE_SIZE = 20;

const root = document.getElementById('console')!;

/** An element with text content and attributes; children appended in order. Never innerHTML: the data is the clinic's. */
function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string> = {},
  ...children: Array<Node | string | undefined>
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  for (const child of children) if (child !== undefined) element.append(child);
  return element;
}

function storedCredentials(): Credentials | undefined {
  const text = sessionStorage.getItem(STORAGE_KEY);
  if (!text) return undefined;
  try {
    return JSON.parse(text) as Credentials;
  } catch {
    return undefined;
  }
}

class ApiFailure extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function api<T>(credentials: Credentials, method: 'GET' | 'POST', path: string): Promise<T> {
  const response = await fetch(path, { method, headers: { businessId: credentials.businessId, user: credentials.user, token: credentials.token } });
  const body = (await response.json().catch(() => ({}))) as { errors?: Array<{ message: string }> };
  if (!response.ok) throw new ApiFailure(response.status, body.errors?.map((error) => error.message).join('; ') ?? `HTTP ${response.status}`);
  return body as T;
}

const time = (iso: string) => new Date(iso).toLocaleString(document.documentElement.lang);

function showSignIn(problem?: string): void {
  const field = (name: keyof Credentials, label: string, type = 'text') =>
    h(
      'label',
      {},
      label,
      h('input', { name, type, required: '', autocomplete: name === 'token' ? 'off' : 'on', ...(name === 'token' ? { spellcheck: 'false' } : {}) }),
    );
  const form = h(
    'form',
    { class: 'sign-in' },
    h('h1', {}, text.title),
    h('p', {}, text.signInIntro),
    field('businessId', 'businessId'),
    field('user', 'user'),
    field('token', 'token', 'password'),
    h('button', { type: 'submit' }, text.signIn),
    problem ? h('p', { class: 'problem', role: 'alert' }, problem) : undefined,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const credentials = { businessId: String(data.get('businessId')).trim(), user: String(data.get('user')).trim(), token: String(data.get('token')) };
    void api(credentials, 'GET', '/api/messages?limit=1').then(
      () => {
        sessionStorage.setItem(STORAGE_KEY, JSON.stringify(credentials));
        showRequests(credentials);
      },
      (error: unknown) => showSignIn(error instanceof ApiFailure && error.status === 401 ? text.unknownAccount : text.noAnswer((error as Error).message)),
    );
  });
  root.replaceChildren(form);
}

function attemptsTable(callback: Callback): HTMLTableElement {
  return h(
    'table',
    { class: 'attempts' },
    h('thead', {}, h('tr', {}, ...text.attemptColumns.map((title) => h('th', {}, title)))),
    h(
      'tbody',
      {},
      ...callback.attempts.map((attempt) =>
        h(
          'tr',
          {},
          h('td', {}, String(attempt.attempt)),
          h('td', {}, time(attempt.at)),
          h('td', {}, attempt.httpStatus === undefined ? text.noAnswerStatus : String(attempt.httpStatus)),
          h('td', {}, attempt.durationMs === undefined ? '' : `${attempt.durationMs} ms`),
          h('td', {}, attempt.error ?? ''),
        ),
      ),
    ),
  );
}

function callbackView(credentials: Credentials, message: Message, callback: Callback, refresh: () => void): HTMLElement {
  const view = h(
    'div',
    { class: `callback state-${callback.state}`, 'data-webhook-id': callback.webhookId },
    h('h4', {}, callback.name, ' ', h('span', { class: `badge ${callback.state}` }, callback.state)),
    callback.url ? h('p', { class: 'url' }, callback.url) : undefined,
    callback.lastError && callback.state !== 'delivered' ? h('p', { class: 'last-error' }, text.lastError(callback.lastError)) : undefined,
    callback.attempts.length > 0 ? attemptsTable(callback) : h('p', {}, text.noAttemptYet),
    // Retried by the gateway: no Replay yet, and the reader is told why.
    callback.state === 'pending' && callback.attempts.length > 0 ? h('p', { class: 'retrying' }, text.retrying) : undefined,
  );
  if (callback.state === 'failed') {
    const status = h('span', { class: 'replay-status', role: 'status' });
    const button = h('button', { type: 'button', class: 'replay' }, text.replay);
    button.addEventListener('click', () => {
      button.disabled = true;
      status.textContent = text.replaying;
      api(credentials, 'POST', `/api/messages/${message.queueMessageId}/replay`).then(
        () => {
          status.textContent = text.replayed;
          refresh();
        },
        (error: unknown) => {
          button.disabled = false;
          status.textContent = error instanceof ApiFailure && error.status === 409 ? text.nothingToReplay : text.replayRefused((error as Error).message);
        },
      );
    });
    view.append(h('p', {}, button, ' ', status));
  }
  return view;
}

/** One request; after a replay it polls its state until no callback is pending or waiting (at most a minute). */
function requestView(credentials: Credentials, initial: Message): HTMLElement {
  const details = h('details', { class: 'request', 'data-queue-message-id': initial.queueMessageId });
  const render = (message: Message) => {
    const failed = message.callbacks.some((callback) => callback.state === 'failed');
    const summary = h(
      'summary',
      {},
      h('span', { class: 'created' }, time(message.createdAt)),
      h('span', { class: 'operation' }, message.operation),
      h('span', { class: `badge ${message.state}` }, message.state),
      h('code', {}, message.queueMessageId),
      message.emdrId ? h('span', { class: 'emdr-id' }, `emdrId ${message.emdrId}`) : undefined,
      failed ? h('span', { class: 'badge failed' }, text.callbackFailed) : undefined,
    );
    const ids = [message.localUid && `localUid ${message.localUid}`, message.clientMessageId && `clientMessageId ${message.clientMessageId}`]
      .filter(Boolean)
      .join(' · ');
    details.replaceChildren(
      summary,
      ids ? h('p', { class: 'ids' }, ids) : '',
      ...(message.errors ?? []).map((error) => h('p', { class: 'problem' }, `${error.code}: ${error.message}`)),
      ...message.callbacks.map((callback) => callbackView(credentials, message, callback, poll)),
    );
    if (failed) details.open = true;
  };
  const poll = () => {
    const started = Date.now();
    const step = () =>
      void api<Message>(credentials, 'GET', `/api/messages/${initial.queueMessageId}`).then((message) => {
        render(message);
        details.open = true;
        const unsettled = message.callbacks.some((callback) => callback.state === 'pending' || callback.state === 'waiting');
        if (unsettled && Date.now() - started < 60_000) setTimeout(step, 1000);
      });
    step();
  };
  render(initial);
  return details;
}

function showRequests(credentials: Credentials): void {
  const filter = h('select', { name: 'filter', 'aria-label': text.filter }, ...FILTERS.map(([label, query]) => h('option', { value: query }, label)));
  const list = h('div', { class: 'requests' });
  const more = h('button', { type: 'button', class: 'more', hidden: '' }, text.loadMore);
  const status = h('p', { class: 'status', role: 'status' });
  const refresh = h('button', { type: 'button' }, text.refresh);
  const signOut = h('button', { type: 'button' }, text.signOut);
  let cursor: string | undefined;

  const load = async (append: boolean) => {
    const query = [filter.value, `limit=${PAGE_SIZE}`, append && cursor ? `cursor=${cursor}` : ''].filter(Boolean).join('&');
    try {
      const page = await api<{ items: Message[]; nextCursor?: string }>(credentials, 'GET', `/api/messages?${query}`);
      const views = page.items.map((message) => requestView(credentials, message));
      if (append) list.append(...views);
      else list.replaceChildren(...views);
      cursor = page.nextCursor;
      more.hidden = cursor === undefined;
      status.textContent = list.childElementCount === 0 ? text.noRequests : text.requestCount(list.childElementCount);
    } catch (error) {
      if (error instanceof ApiFailure && error.status === 401) {
        sessionStorage.removeItem(STORAGE_KEY);
        showSignIn(text.signedOut);
        return;
      }
      status.textContent = text.loadFailed((error as Error).message);
    }
  };
  filter.addEventListener('change', () => void load(false));
  refresh.addEventListener('click', () => void load(false));
  more.addEventListener('click', () => void load(true));
  signOut.addEventListener('click', () => {
    sessionStorage.removeItem(STORAGE_KEY);
    showSignIn();
  });
  root.replaceChildren(
    h('header', {}, h('h1', {}, text.title), h('span', { class: 'who' }, text.who(credentials.user, credentials.businessId)), signOut),
    h('div', { class: 'toolbar' }, h('label', {}, text.show, filter), refresh),
    status,
    list,
    more,
  );
  void load(false);
}

const credentials = storedCredentials();
if (credentials) showRequests(credentials);
else showSignIn();
