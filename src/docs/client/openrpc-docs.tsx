// Browser entry of the interface A documentation page; bundled by scripts/build-docs.ts.
import React from 'react';
import { createRoot } from 'react-dom/client';
import { Documentation } from '@open-rpc/docs-react';
import { inlineLocalRefs } from '../../validation/inline-refs.js';

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

function ErrorCodes({ codes }: { codes: ErrorCode[] }) {
  return (
    <section id="error-codes" className="error-codes">
      <h2>Error codes</h2>
      <p>Every JSON-RPC error this server answers (the <code>error.code</code> and <code>error.message</code>); application errors carry <code>data.reason</code>.</p>
      <table>
        <thead>
          <tr>
            <th>code</th>
            <th>message</th>
            <th>when</th>
          </tr>
        </thead>
        <tbody>
          {codes.map((entry) => (
            <tr key={entry.code}>
              <td><code>{entry.code}</code></td>
              <td><code>{entry.message}</code></td>
              <td>{withCode(entry.meaning)}</td>
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
  createRoot(container).render(
    <>
      <nav className="page-toc">
        On this page: <a href="#error-codes">error codes</a>
      </nav>
      <Documentation schema={schema as never} uiSchema={{ params: { 'ui:defaultExpanded': true } }} />
      <ErrorCodes codes={spec['x-error-codes'] ?? []} />
    </>,
  );
}

void render();
