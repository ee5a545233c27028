import { createHash, randomUUID } from 'node:crypto';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildXml, childOf, childrenOf, parseXml, textOf, type XmlElement, type XmlNode } from '../../src/xml/xml.js';

/**
 * A stand-in of the federal registry (РЭМД) that speaks its SOAP over real HTTP, written from the
 * public samples on its own (not from the gateway's mapping, so a mistake there shows here): the
 * SOAP 1.2 envelope and media type, the transportHeader with the configured clientEntityId, a
 * WS-Addressing MessageID (a UUID) and Action, and a body element `<operation>Request` in the service
 * namespace (GitHub bacbkasw/at_4_remd, test_searchRegistryItem.py). It answers at once; after
 * `answerDelayMs` it pulls a registered document from the gateway (getDocumentFile) and calls the
 * gateway back (registerDocumentResult: GitHub asaf1n/egisz-monitor, parser and tests; a demanded
 * file), again until the gateway takes it. A message it cannot take is refused with a SOAP fault and
 * listed in `violations`.
 */

const NS = {
  soap12: 'http://www.w3.org/2003/05/soap-envelope',
  wsa: 'http://www.w3.org/2005/08/addressing',
  egisz: 'http://egisz.rosminzdrav.ru',
  service: 'http://egisz.rosminzdrav.ru/iehr/emdr/service/',
  callback: 'http://egisz.rosminzdrav.ru/iehr/emdr/callback/',
  xml: 'http://www.w3.org/XML/1998/namespace',
};
const OPERATIONS = ['registerDocument', 'searchRegistryItem', 'getRegistryItem', 'demandContent'] as const;
type Operation = (typeof OPERATIONS)[number];
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const LIMITS = { maxDepth: 32, maxElements: 10_000 };

export interface TakenRequest {
  operation: Operation;
  messageId: string;
  action: string;
  fields: Record<string, string>;
  signatures: Array<{ signature: string; snils?: string }>;
}

export interface RegisteredDocument {
  emdrId: string;
  localUid: string;
  kind: string;
  organization: string;
  patientSnils: string;
  version: number;
  registrationDateTime: string;
  content: Buffer;
  signature: Buffer;
}

/** A refusal with a classifier code: in the answer to the request, or in its result later. */
export interface Refusal {
  operation: 'registerDocument' | 'demandContent';
  code: string;
  message: string;
  when: 'at-once' | 'in-result';
}

export interface RemdStandIn {
  /** The endpoint (REMD_URL): http://127.0.0.1:PORT/port/emdr */
  url: string;
  /** The gateway's endpoint it calls (http://HOST:REMD_CALLBACK_PORT/emdr/callback). */
  gatewayUrl: string | undefined;
  answerDelayMs: number;
  /** Take requests but never call back (a registry that does not answer). */
  silent: boolean;
  /** Every request taken, in order. */
  taken: TakenRequest[];
  /** Messages it refused: what was wrong with them. */
  violations: string[];
  /** Submissions (registerDocument, demandContent) whose MessageID came more than once. */
  repeatedMessageIds: string[];
  /** The gateway's answers to its calls: per message id, the HTTP statuses in order. */
  calls: Array<{ kind: string; messageId?: string; status: number; body: string }>;
  documents: Map<string, RegisteredDocument>;
  refuseNext(refusal: Refusal): void;
  /** Keeps its answers (and pulls) until release(): an answer that comes exactly when a test wants it. */
  hold(): void;
  release(): void;
  /** Answers 503 until up(): the registry is unreachable. */
  down(): void;
  up(): void;
  /** Posts a SOAP message to the gateway's endpoint; its answer. */
  post(xml: string, contentType?: string): Promise<{ status: number; body: string }>;
  /** The registerDocumentResult last sent for `messageId`, sent again. */
  resend(messageId: string): Promise<{ status: number; body: string }>;
  /** Resolves when no callback of it is on its way (every result taken by the gateway, or given up). */
  idle(): Promise<void>;
  close(): Promise<void>;
}

/** The line the gateway logs once its endpoint for the registry listens, with the port it bound. */
const ENDPOINT_LINE = /^(.*"msg":"listening for the registry's answers".*)\n/m;

/**
 * The gateway's endpoint for the registry (REMD_CALLBACK_HOST 127.0.0.1), read from the log of the
 * service that bound it, or undefined before it has: with REMD_CALLBACK_PORT=0 the port is the one
 * the OS picked when it bound it, so no port is taken between choosing and binding.
 */
export function gatewayEndpointIn(log: string): string | undefined {
  const line = ENDPOINT_LINE.exec(log)?.[1];
  return line === undefined ? undefined : `http://127.0.0.1:${(JSON.parse(line) as { port: number }).port}/emdr/callback`;
}

/** An envelope in SOAP 1.2 around one body element. */
export function soapMessage(body: XmlNode): string {
  return buildXml({ uri: NS.soap12, name: 'env:Envelope', content: [{ uri: NS.soap12, name: 'env:Body', content: [body] }] });
}

const el = (uri: string, name: string, content: XmlNode['content']): XmlNode => ({ uri, name, content });
const cb = (name: string, content: XmlNode['content']) => el(NS.callback, `r:${name}`, content);
const svc = (name: string, content: XmlNode['content']) => el(NS.service, `ns3:${name}`, content);

function soapFault(reason: string): string {
  return soapMessage(
    el(NS.soap12, 'env:Fault', [
      el(NS.soap12, 'env:Code', [el(NS.soap12, 'env:Value', 'env:Sender')]),
      { uri: NS.soap12, name: 'env:Reason', content: [{ uri: NS.soap12, name: 'env:Text', content: reason, attributes: [[NS.xml, 'xml:lang', 'en']] }] },
    ]),
  );
}

/** A registerDocumentResult as the public parser reads it: relatesToMessage, status, kind, organization, registryItem, errors. */
export function registerDocumentResult(relatesToMessage: string, outcome: { document: RegisteredDocument } | { code: string; message: string }): string {
  return soapMessage(
    cb('registerDocumentResult', [
      cb('relatesToMessage', relatesToMessage),
      cb('status', 'document' in outcome ? 'success' : 'error'),
      ...('document' in outcome
        ? [
            cb('kind', outcome.document.kind),
            cb('organization', outcome.document.organization),
            cb('registryItem', [
              cb('emdrId', outcome.document.emdrId),
              cb('registrationDateTime', outcome.document.registrationDateTime),
              cb('storeTillDate', '2046-09-11+03:00'),
            ]),
          ]
        : [cb('errors', [cb('item', [cb('code', outcome.code), cb('message', outcome.message)])])]),
    ]),
  );
}

function demandContentResult(relatesToMessage: string, document: RegisteredDocument | undefined): string {
  return soapMessage(
    cb('demandContentResult', [
      cb('relatesToMessage', relatesToMessage),
      cb('status', document ? 'success' : 'error'),
      document
        ? cb('document', [
            cb('emdrId', document.emdrId),
            cb('localUid', document.localUid),
            cb('kind', document.kind),
            cb('version', String(document.version)),
            cb('fileName', `${document.emdrId}.xml`),
            cb('organization', document.organization),
            cb('patientSnils', document.patientSnils),
            cb('content', document.content.toString('base64')),
            cb('signature', document.signature.toString('base64')),
          ])
        : cb('errors', [cb('item', [cb('code', 'REGISTRY_ITEM_NOT_FOUND'), cb('message', 'Запрашиваемая запись регистра не найдена')])]),
    ]),
  );
}

function itemOf(document: RegisteredDocument): XmlNode[] {
  return [
    svc('emdrId', document.emdrId),
    svc('localUid', document.localUid),
    svc('kind', document.kind),
    svc('organization', document.organization),
    svc('patientSnils', document.patientSnils),
    svc('registrationDateTime', document.registrationDateTime),
    svc('storeTillDate', '2046-09-11+03:00'),
    svc('version', String(document.version)),
  ];
}

/** What is wrong with a request, by the public sample's envelope and header; undefined when nothing. */
function violationOf(request: IncomingMessage, root: XmlElement | undefined, clientEntityId: string): string | undefined {
  if (request.method !== 'POST' || request.url !== '/port/emdr') return `${request.method} ${request.url}: not the endpoint`;
  if (!/^application\/soap\+xml\s*;\s*charset=utf-8\b/i.test(request.headers['content-type'] ?? ''))
    return `content-type ${request.headers['content-type']}: not SOAP 1.2 in UTF-8`;
  if (!root || root.uri !== NS.soap12 || root.local !== 'Envelope') return 'not a SOAP 1.2 envelope';
  const header = childOf(root, NS.soap12, 'Header');
  const clientEntity = textOf(childOf(childOf(header, NS.egisz, 'transportHeader'), NS.egisz, 'authInfo'), NS.egisz, 'clientEntityId');
  if (clientEntity !== clientEntityId) return `transportHeader/authInfo/clientEntityId is ${clientEntity}, not ${clientEntityId}`;
  if (!UUID.test(textOf(header, NS.wsa, 'MessageID') ?? '')) return 'wsa:MessageID is not a UUID';
  if (!textOf(header, NS.wsa, 'Action')) return 'no wsa:Action';
  const body = childOf(root, NS.soap12, 'Body');
  if (body?.children.length !== 1) return 'the Body holds not exactly one element';
  const element = body.children[0]!;
  const operation = OPERATIONS.find((candidate) => element.local === `${candidate}Request`);
  if (element.uri !== NS.service || !operation) return `{${element.uri}}${element.local}: not a request of the service`;
  const required: Record<Operation, string[]> = {
    registerDocument: ['localUid', 'kind', 'organization', 'patientSnils', 'creationDateTime'],
    searchRegistryItem: [],
    getRegistryItem: ['emdrId'],
    demandContent: ['emdrId'],
  };
  for (const name of required[operation]) if (!textOf(element, NS.service, name)) return `${operation}Request without ${name}`;
  if (operation === 'registerDocument') {
    if (!/^\d{11}$/.test(textOf(element, NS.service, 'patientSnils')!)) return 'patientSnils is not 11 digits';
    const signatures = childrenOf(childOf(element, NS.service, 'signatures'), NS.service, 'item');
    if (signatures.length === 0 || signatures.some((item) => !/^[A-Za-z0-9+/]+={0,2}$/.test(textOf(item, NS.service, 'signature') ?? '')))
      return 'registerDocumentRequest without base64 signatures';
  }
  return undefined;
}

async function bodyText(request: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of request as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

export async function startRemdStandIn(options: { clientEntityId: string; gatewayUrl?: string; answerDelayMs?: number }): Promise<RemdStandIn> {
  const refusals: Refusal[] = [];
  const seen = new Set<string>();
  const lastResult = new Map<string, string>();
  const pending = new Set<Promise<unknown>>();
  let sequence = 0;
  let isDown = false;
  let closed = false;
  let held: { promise: Promise<void>; resolve: () => void } | undefined;

  const post = async (xml: string, contentType = 'application/soap+xml; charset=utf-8'): Promise<{ status: number; body: string }> => {
    const response = await fetch(standIn.gatewayUrl!, { method: 'POST', headers: { 'content-type': contentType }, body: xml });
    return { status: response.status, body: await response.text() };
  };

  /** Sends a result until the gateway takes it (a 200) or refuses it (a 4xx); an unreachable gateway is tried again. */
  const deliver = async (kind: string, messageId: string, xml: string) => {
    for (let attempt = 0; !closed && attempt < 600; attempt += 1) {
      try {
        const answer = await post(xml);
        standIn.calls.push({ kind, messageId, ...answer });
        if (answer.status < 500) return;
      } catch {
        // the gateway is not listening (restarting): again shortly
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };

  /** The document the gateway keeps for the registry, pulled (getDocumentFile). */
  const pull = async (fields: Record<string, string>): Promise<{ content: Buffer; signature: Buffer } | { code: string; message: string }> => {
    let answer: { status: number; body: string } | undefined;
    // A providing system that does not listen (restarting) is asked again for a while, as a registry would.
    for (let attempt = 0; !answer && !closed && attempt < 900; attempt += 1) {
      try {
        answer = await post(soapMessage(cb('getDocumentFileRequest', [cb('localUid', fields.localUid!), cb('organization', fields.organization!)])));
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    if (!answer) return { code: 'MIS_NOT_AVAILABLE', message: 'Сервис системы, предоставляющей документ, не доступен' };
    standIn.calls.push({ kind: 'getDocumentFile', status: answer.status, body: answer.body.slice(0, 2000) });
    if (answer.status !== 200) return { code: 'GET_DOCUMENT_FILE_ERROR', message: `getDocumentFile answered HTTP ${answer.status}` };
    const response = childOf(childOf(parseXml(answer.body, { maxDepth: 32, maxElements: 1000 }), NS.soap12, 'Body'), NS.callback, 'getDocumentFileResponse');
    const content = textOf(childOf(response, NS.callback, 'document'), NS.callback, 'content');
    if (textOf(response, NS.callback, 'status') !== 'success' || !content) return { code: 'FILE_WAS_NOT_SENT', message: 'ИС не передала файл ЭМД' };
    return {
      content: Buffer.from(content, 'base64'),
      signature: Buffer.from(textOf(childOf(response, NS.callback, 'document'), NS.callback, 'signature') ?? '', 'base64'),
    };
  };

  const later = (work: () => Promise<void>) => {
    const job = (async () => {
      await new Promise((resolve) => setTimeout(resolve, standIn.answerDelayMs));
      await held?.promise;
      if (!closed && !standIn.silent) await work();
    })().catch(() => undefined);
    pending.add(job);
    void job.finally(() => pending.delete(job));
  };

  const refusalFor = (operation: Refusal['operation'], when: Refusal['when']) => {
    const index = refusals.findIndex((refusal) => refusal.operation === operation && refusal.when === when);
    return index < 0 ? undefined : refusals.splice(index, 1)[0];
  };

  const registerLater = (taken: TakenRequest) =>
    later(async () => {
      const refused = refusalFor('registerDocument', 'in-result');
      const pulled = refused ?? (await pull(taken.fields));
      let xml: string;
      if ('code' in pulled) {
        xml = registerDocumentResult(taken.messageId, pulled);
      } else {
        sequence += 1;
        const document: RegisteredDocument = {
          emdrId: `${new Date().toISOString().slice(2, 4)}.${new Date().toISOString().slice(5, 7)}.${String(900_000_000 + sequence)}`,
          localUid: taken.fields.localUid!,
          kind: taken.fields.kind!,
          organization: taken.fields.organization!,
          patientSnils: taken.fields.patientSnils!,
          version: 1,
          registrationDateTime: new Date().toISOString(),
          ...pulled,
        };
        standIn.documents.set(document.emdrId, document);
        xml = registerDocumentResult(taken.messageId, { document });
      }
      lastResult.set(taken.messageId, xml);
      await deliver('registerDocumentResult', taken.messageId, xml);
    });

  const demandLater = (taken: TakenRequest) =>
    later(async () => {
      const refused = refusalFor('demandContent', 'in-result');
      const xml = refused
        ? soapMessage(
            cb('demandContentResult', [
              cb('relatesToMessage', taken.messageId),
              cb('status', 'error'),
              cb('errors', [cb('item', [cb('code', refused.code), cb('message', refused.message)])]),
            ]),
          )
        : demandContentResult(taken.messageId, standIn.documents.get(taken.fields.emdrId!));
      lastResult.set(taken.messageId, xml);
      await deliver('demandContentResult', taken.messageId, xml);
    });

  /** The answer to a request taken: at once, as the registry answers (`<operation>Response`, status). */
  const respond = (taken: TakenRequest): string => {
    const status = (value: string, extra: XmlNode[] = []) => soapMessage(svc(`${taken.operation}Response`, [svc('status', value), ...extra]));
    if (taken.operation === 'registerDocument' || taken.operation === 'demandContent') {
      const refused = refusalFor(taken.operation, 'at-once');
      if (refused) return status('error', [svc('errors', [svc('item', [svc('code', refused.code), svc('message', refused.message)])])]);
      if (taken.operation === 'registerDocument') registerLater(taken);
      else demandLater(taken);
      return status('success');
    }
    if (taken.operation === 'getRegistryItem') {
      const document = standIn.documents.get(taken.fields.emdrId!);
      return document
        ? status('success', [svc('item', itemOf(document))])
        : status('error', [svc('errors', [svc('item', [svc('code', 'REGISTRY_ITEM_NOT_FOUND'), svc('message', 'not found')])])]);
    }
    const matches = [...standIn.documents.values()].filter(
      (document) =>
        (!taken.fields.organization || document.organization === taken.fields.organization) &&
        (!taken.fields.kind || document.kind === taken.fields.kind) &&
        (!taken.fields.patientSnils || document.patientSnils === taken.fields.patientSnils) &&
        (!taken.fields.localUid || document.localUid === taken.fields.localUid),
    );
    return status('success', [
      svc(
        'matches',
        matches.map((document) => svc('item', itemOf(document))),
      ),
    ]);
  };

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const text = await bodyText(request);
    if (isDown) {
      response.writeHead(503).end();
      return;
    }
    let root: XmlElement | undefined;
    try {
      root = parseXml(text, LIMITS);
    } catch {
      root = undefined;
    }
    const violation = violationOf(request, root, options.clientEntityId);
    const send = (status: number, xml: string) => response.writeHead(status, { 'content-type': 'application/soap+xml; charset=utf-8' }).end(xml);
    if (violation) {
      standIn.violations.push(violation);
      send(400, soapFault(violation));
      return;
    }
    const header = childOf(root, NS.soap12, 'Header');
    const element = childOf(root, NS.soap12, 'Body')!.children[0]!;
    const operation = element.local.replace(/Request$/, '') as Operation;
    const messageId = textOf(header, NS.wsa, 'MessageID')!;
    const fields = Object.fromEntries(element.children.filter((child) => child.children.length === 0).map((child) => [child.local, child.text.trim()]));
    const signatures = childrenOf(childOf(element, NS.service, 'signatures'), NS.service, 'item').map((item) => {
      const snils = textOf(childOf(item, NS.service, 'signer'), NS.service, 'snils');
      return { signature: textOf(item, NS.service, 'signature')!, ...(snils ? { snils } : {}) };
    });
    const taken: TakenRequest = { operation, messageId, action: textOf(header, NS.wsa, 'Action')!, fields, signatures };
    if (operation === 'registerDocument' || operation === 'demandContent') {
      if (seen.has(messageId)) standIn.repeatedMessageIds.push(messageId);
      seen.add(messageId);
    }
    standIn.taken.push(taken);
    send(200, respond(taken));
  };

  const server = http.createServer((request, response) => {
    handle(request, response).catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const standIn: RemdStandIn = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/port/emdr`,
    gatewayUrl: options.gatewayUrl,
    answerDelayMs: options.answerDelayMs ?? 0,
    silent: false,
    taken: [],
    violations: [],
    repeatedMessageIds: [],
    calls: [],
    documents: new Map(),
    refuseNext: (refusal) => refusals.push(refusal),
    hold: () => {
      let resolve!: () => void;
      held ??= { promise: new Promise<void>((done) => (resolve = done)), resolve: () => resolve() };
    },
    release: () => {
      held?.resolve();
      held = undefined;
    },
    down: () => (isDown = true),
    up: () => (isDown = false),
    post,
    resend: (messageId) => post(lastResult.get(messageId)!),
    idle: async () => {
      while (pending.size > 0) await Promise.all([...pending]);
    },
    close: async () => {
      closed = true;
      held?.resolve();
      await Promise.all([...pending]);
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return standIn;
}

/** A document's digest, for comparing what the stand-in pulled with what the clinic sent. */
export const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
export const newMessageId = () => randomUUID();
