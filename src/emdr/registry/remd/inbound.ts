import net from 'node:net';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressRange } from '../../../config/config.js';
import { isDatabaseUnavailable } from '../../../db/database.js';
import { startListener, type ConnectionLimits, type Listener } from '../../../http/listener.js';
import type { Logger } from '../../../logging/logger.js';
import { XmlError } from '../../../xml/xml.js';
import { base64Length } from '../../values/values.js';
import type { KeptFiles, OutcomeReceipt, OutcomeSink, RegistryOutcome } from '../port.js';
import { acknowledgement, contentTypeOf, documentFileResponse, fault, readInbound, type InboundMessage, type SoapVersion } from './soap-messages.js';

/**
 * The gateway's endpoint for the registry: `POST /emdr/callback` on its own listener
 * (REMD_CALLBACK_HOST, REMD_CALLBACK_PORT), bounded as every input is: only from
 * REMD_ALLOWED_SOURCES, checked before anything is read; the listener's time limits; a body of at
 * most a document's size in base64; a shallow XML of few elements, no DTD. It takes the registry's
 * answers (registerDocumentResult, a demanded file), matched to the request by relatesToMessage and
 * recorded once (a repeated answer is acknowledged and changes nothing; an unknown message id is
 * refused with a fault and logged), and serves getDocumentFile from the documents the gateway keeps.
 */

export const CALLBACK_PATH = '/emdr/callback';

export interface InboundOptions {
  host: string;
  port: number;
  allowedSources: readonly AddressRange[];
  limits: ConnectionLimits;
  /** The largest document a clinic may register (BODY_LIMIT): a delivered file is at most its base64. */
  documentLimitBytes: number;
  sink: OutcomeSink;
  files: KeptFiles;
  logger: Logger;
}

/** What a SOAP message adds to a document's base64: the envelope, the other fields, the signature. */
const ENVELOPE_ALLOWANCE_BYTES = 1024 * 1024;

class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: 'Sender' | 'Receiver',
    readonly reason: string,
    readonly version: SoapVersion = '1.2',
  ) {
    super(reason);
  }
}

function allowedList(ranges: readonly AddressRange[]): net.BlockList {
  const list = new net.BlockList();
  for (const range of ranges) list.addSubnet(range.address, range.prefix, range.family);
  return list;
}

/** The caller's address, an IPv4 one mapped into IPv6 (`::ffff:10.1.2.3`) as IPv4. */
function sourceOf(request: IncomingMessage): { address: string; family: 'ipv4' | 'ipv6' } | undefined {
  const address = request.socket.remoteAddress;
  if (!address) return undefined;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) return { address: mapped[1]!, family: 'ipv4' };
  return { address, family: net.isIPv6(address) ? 'ipv6' : 'ipv4' };
}

async function readBody(request: IncomingMessage, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    length += chunk.length;
    if (length > limit) throw new Refusal(413, 'Sender', `the message is larger than ${limit} bytes`);
    chunks.push(chunk);
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.concat(chunks));
  } catch {
    throw new Refusal(400, 'Sender', 'the message is not UTF-8');
  }
}

function answer(response: ServerResponse, status: number, version: SoapVersion, body: string): void {
  response.writeHead(status, { 'Content-Type': contentTypeOf(version), 'Content-Length': Buffer.byteLength(body) });
  response.end(body);
}

/** The registry's answer as the outcome the sink records. */
function outcomeOf(message: Extract<InboundMessage, { relatesToMessage: string }>): RegistryOutcome {
  const messageId = message.relatesToMessage;
  const errors = message.errors.length > 0 ? message.errors : [{ code: 'INTERNAL_ERROR', message: 'the registry refused without naming an error' }];
  if (message.kind === 'registerDocumentResult')
    return message.registration ? { messageId, ok: true, registration: message.registration } : { messageId, ok: false, errors };
  if (!message.document) return { messageId, ok: false, errors };
  const { content: _content, signature: _signature, ...file } = message.document;
  return { messageId, ok: true, file };
}

export async function startInbound(options: InboundOptions): Promise<Listener> {
  const allowed = allowedList(options.allowedSources);
  const bodyLimit = base64Length(options.documentLimitBytes) + ENVELOPE_ALLOWANCE_BYTES;
  const { sink, files, logger } = options;

  async function record(message: Extract<InboundMessage, { relatesToMessage: string }>): Promise<OutcomeReceipt> {
    if (message.kind === 'demandContentResult' && message.document)
      await sink.storeFile(message.relatesToMessage, message.document.content, message.document.signature);
    return (await sink.record([outcomeOf(message)]))[0]!;
  }

  async function serveFile(response: ServerResponse, version: SoapVersion, localUid: string, organization: string): Promise<void> {
    const kept = await files.find(localUid, organization);
    const parts = documentFileResponse(version, kept !== undefined);
    logger.info({ found: kept !== undefined, queueMessageId: kept?.queueMessageId }, 'the registry asked for a document file');
    if (typeof parts === 'string' || !kept) {
      answer(response, 200, version, parts as string);
      return;
    }
    const length =
      Buffer.byteLength(parts.before) +
      base64Length(kept.documentSize) +
      Buffer.byteLength(parts.between) +
      base64Length(kept.signatureSize) +
      Buffer.byteLength(parts.after);
    response.writeHead(200, { 'Content-Type': contentTypeOf(version), 'Content-Length': length });
    response.write(parts.before);
    for await (const slice of files.base64Slices(kept, 'document')) response.write(slice);
    response.write(parts.between);
    for await (const slice of files.base64Slices(kept, 'signature')) response.write(slice);
    response.end(parts.after);
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const source = sourceOf(request);
    if (!source || !allowed.check(source.address, source.family)) {
      logger.warn({ source: source?.address }, 'a call to the registry endpoint from an address not in REMD_ALLOWED_SOURCES, refused');
      throw new Refusal(403, 'Sender', 'this address may not call the endpoint');
    }
    const path = (request.url ?? '').split('?')[0];
    if (path !== CALLBACK_PATH) throw new Refusal(404, 'Sender', `no such endpoint; the registry's is POST ${CALLBACK_PATH}`);
    if (request.method !== 'POST') throw new Refusal(405, 'Sender', 'only POST');
    const type = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    if (type !== 'application/soap+xml' && type !== 'text/xml')
      throw new Refusal(415, 'Sender', 'a SOAP message is application/soap+xml (SOAP 1.2) or text/xml (SOAP 1.1)');
    const encoding = (request.headers['content-encoding'] ?? 'identity').toLowerCase();
    if (encoding !== 'identity') throw new Refusal(415, 'Sender', 'compressed messages are not taken');
    if (Number(request.headers['content-length'] ?? 0) > bodyLimit) throw new Refusal(413, 'Sender', `the message is larger than ${bodyLimit} bytes`);
    let inbound: ReturnType<typeof readInbound>;
    try {
      inbound = readInbound(await readBody(request, bodyLimit));
    } catch (error) {
      if (error instanceof XmlError) throw new Refusal(400, 'Sender', `the message cannot be read: ${error.message}`, type === 'text/xml' ? '1.1' : '1.2');
      throw error;
    }
    const { version, message } = inbound;
    if (message.kind === 'getDocumentFile') {
      await serveFile(response, version, message.localUid, message.organization);
      return;
    }
    const receipt = await record(message);
    if (receipt === 'unknown') {
      logger.warn(
        { relatesToMessage: message.relatesToMessage.slice(0, 64), kind: message.kind },
        'the registry answered a message the gateway did not send; refused',
      );
      throw new Refusal(400, 'Sender', `no request of the gateway was sent as message ${message.relatesToMessage.slice(0, 64)}`, version);
    }
    logger.info({ queueMessageId: message.relatesToMessage, kind: message.kind, receipt }, 'the registry answered');
    answer(response, 200, version, acknowledgement(version, message.kind));
  }

  return startListener(
    (request, response) => {
      handle(request, response).catch((error: unknown) => {
        const refusal =
          error instanceof Refusal
            ? error
            : new Refusal(isDatabaseUnavailable(error) ? 503 : 500, 'Receiver', 'the gateway cannot take the message now; send it again later');
        if (!(error instanceof Refusal)) logger.error({ code: (error as { code?: unknown }).code }, 'the registry endpoint failed');
        if (response.headersSent) {
          response.destroy();
          return;
        }
        answer(response, refusal.status, refusal.version, fault(refusal.version, refusal.code, refusal.reason));
      });
    },
    options.host,
    options.port,
    { limits: options.limits },
  );
}
