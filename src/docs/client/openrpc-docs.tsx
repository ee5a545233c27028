// Browser entry of the interface A documentation page; bundled by scripts/build-docs.ts.
import React from 'react';
import { createRoot } from 'react-dom/client';
import { Documentation } from '@open-rpc/docs-react';
import { inlineLocalRefs } from '../../validation/inline-refs.js';
import { RPC_ERROR_MEANINGS_RU } from '../error-codes-ru.js';

interface ErrorCode {
  code: number;
  message: string;
  meaning: string;
}

interface Server {
  name?: string;
  url: string;
  description?: string;
}

interface OpenRpcDocument {
  info: { version: string };
  servers?: Server[];
  'x-error-codes'?: ErrorCode[];
}

/**
 * The servers as this service serves them: the public one at the host the page was loaded from, the
 * internal channel on the same host name at the service's INTERNAL_PORT (data-internal-port), not
 * the spec's localhost:8080 and :8081.
 */
function servedServers(document: OpenRpcDocument, internalPort: string | undefined): Server[] {
  const path = `/${document.info.version}/`;
  return (document.servers ?? []).map((server) => {
    if (server.name === 'public') return { ...server, url: `${window.location.origin}${path}` };
    if (server.name === 'internal' && internalPort) return { ...server, url: `${window.location.protocol}//${window.location.hostname}:${internalPort}${path}` };
    return server;
  });
}

/** Text whose `backquoted` parts are code, as in the spec's Markdown. */
function withCode(text: string) {
  return text.split('`').map((part, index) => (index % 2 === 1 ? <code key={index}>{part}</code> : part));
}

const TEXT = {
  en: {
    onThisPage: 'On this page:',
    errorCodes: 'error codes',
    title: 'Error codes',
    intro: (
      <>
        Every JSON-RPC error this server answers (the <code>error.code</code> and <code>error.message</code>); application errors carry <code>data.reason</code>. The message and the reason are
        always English: they are for logs.
      </>
    ),
  },
  ru: {
    onThisPage: 'На этой странице:',
    errorCodes: 'коды ошибок',
    title: 'Коды ошибок',
    intro: (
      <>
        Каждая ошибка JSON-RPC, которой отвечает этот сервер (<code>error.code</code> и <code>error.message</code>); у ошибок приложения есть <code>data.reason</code>. Сообщение и причина всегда на
        английском: они для журналов.
      </>
    ),
  },
};

type Language = keyof typeof TEXT;

/** The codes with their meanings in both languages, the page's own first. */
function ErrorCodes({ codes, language }: { codes: ErrorCode[]; language: Language }) {
  const english = { title: 'when (English)', meaning: (entry: ErrorCode) => withCode(entry.meaning) };
  const russian = { title: 'когда (по-русски)', meaning: (entry: ErrorCode) => withCode(RPC_ERROR_MEANINGS_RU[String(entry.code)] ?? '—') };
  const columns = language === 'ru' ? [russian, english] : [english, russian];
  return (
    <section id="error-codes" className="error-codes">
      <h2>{TEXT[language].title}</h2>
      <p>{TEXT[language].intro}</p>
      <table>
        <thead>
          <tr>
            <th>code</th>
            <th>message</th>
            {columns.map((column) => (
              <th key={column.title}>{column.title}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {codes.map((entry) => (
            <tr key={entry.code}>
              <td><code>{entry.code}</code></td>
              <td><code>{entry.message}</code></td>
              {columns.map((column) => (
                <td key={column.title}>{column.meaning(entry)}</td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

async function render(): Promise<void> {
  const container = document.getElementById('openrpc-docs')!;
  const response = await fetch(container.dataset.spec!);
  // docs-react reads no $ref: a method's tags (`#/components/tags/…`) reached it as objects without a
  // name, and expanding a method threw ("Input string is required"), blanking the whole page.
  const spec = inlineLocalRefs((await response.json()) as object) as OpenRpcDocument;
  const schema = { ...spec, servers: servedServers(spec, container.dataset.internalPort) };
  const language: Language = document.documentElement.lang === 'ru' ? 'ru' : 'en';
  createRoot(container).render(
    <>
      <nav className="page-toc">
        {TEXT[language].onThisPage} <a href="#error-codes">{TEXT[language].errorCodes}</a>
      </nav>
      <Documentation schema={schema as never} uiSchema={{ params: { 'ui:defaultExpanded': true } }} />
      <ErrorCodes codes={spec['x-error-codes'] ?? []} language={language} />
    </>,
  );
}

void render();
