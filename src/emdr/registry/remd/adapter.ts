import { randomUUID } from 'node:crypto';
import { Agent, request } from 'undici';
import type { RemdConfig } from '../../../config/config.js';
import type { ConnectionLimits } from '../../../http/listener.js';
import type { Logger } from '../../../logging/logger.js';
import type { XmlError, XmlNode } from '../../../xml/xml.js';
import {
  RegistryUnavailableError,
  type DemandSubmission,
  type DocumentOwner,
  type KeptFiles,
  type OutcomeSink,
  type RegistrationSubmission,
  type RegistryItem,
  type RegistryPort,
  type RegistryRecord,
  type RegistrySearch,
  type Submission,
} from '../port.js';
import { startInbound } from './inbound.js';
import {
  emdrIdFields,
  readServiceResponse,
  registerDocumentFields,
  registryItemOf,
  searchMatches,
  searchRegistryItemFields,
  serviceRequest,
  SOAP12_CONTENT_TYPE,
  type ServiceOperation,
} from './soap-messages.js';

/** How long the registry has to answer a call (it answers at once; the result comes later). */
const CALL_TIMEOUT_MS = 15_000;
/** The most of an answer read: a search's matches are the largest. */
const ANSWER_LIMIT_BYTES = 4 * 1024 * 1024;
/** Organizations searched at once when a clinic account acts for several (the registry's search takes one). */
const SEARCH_FAN_OUT = 8;

export interface RemdRegistryOptions {
  config: RemdConfig;
  logger: Logger;
  /** The inbound listener's limits (the service's HEADERS_TIMEOUT, REQUEST_TIMEOUT, BODY_MIN_RATE, MAX_CONNECTIONS). */
  connectionLimits: ConnectionLimits;
  /** BODY_LIMIT: a delivered file is at most that. */
  documentLimitBytes: number;
}

/**
 * The federal registry (REGISTRY=remd) over SOAP 1.2 (the messages: soap-messages.ts). Calls answer
 * at once: a submission is taken or refused; the result arrives later at the inbound endpoint
 * (inbound.ts), which receive() starts. An unreachable registry, a timeout, an answer that is not
 * SOAP or a fault are "unavailable": the caller tries again later, under the same message id.
 */
export class RemdRegistry implements RegistryPort {
  private readonly agent = new Agent({ keepAliveTimeout: 30_000, connections: 16 });

  constructor(private readonly options: RemdRegistryOptions) {}

  /** One call: the request under `messageId`, its answer read; throws RegistryUnavailableError. */
  private async call(operation: ServiceOperation, messageId: string, fields: ReadonlyArray<XmlNode | undefined>) {
    const body = serviceRequest(operation, { messageId, clientEntityId: this.options.config.clientEntityId }, fields);
    let text: string;
    try {
      const response = await request(this.options.config.url, {
        method: 'POST',
        headers: { 'content-type': `${SOAP12_CONTENT_TYPE}; action="${operation}"` },
        body,
        dispatcher: this.agent,
        headersTimeout: CALL_TIMEOUT_MS,
        bodyTimeout: CALL_TIMEOUT_MS,
      });
      text = await answerText(response.body);
      if (response.statusCode >= 500 && !text.includes('Envelope')) throw new RegistryUnavailableError(`the registry answered HTTP ${response.statusCode}`);
    } catch (error) {
      if (error instanceof RegistryUnavailableError) throw error;
      const err = error as Error & { code?: string; cause?: { code?: string } };
      throw new RegistryUnavailableError(`the registry cannot be reached: ${err.cause?.code ?? err.code ?? err.name}`, { cause: error });
    }
    let answer;
    try {
      answer = readServiceResponse(text, operation);
    } catch (error) {
      throw new RegistryUnavailableError(`the registry's answer to ${operation} cannot be read: ${(error as XmlError).message}`);
    }
    if ('fault' in answer) throw new RegistryUnavailableError(`the registry answered ${operation} with a fault: ${answer.fault}`);
    return answer;
  }

  /** A submission's answer: taken unless it says `error`. */
  private async submit(operation: ServiceOperation, messageId: string, fields: ReadonlyArray<XmlNode | undefined>): Promise<Submission> {
    const answer = await this.call(operation, messageId, fields);
    if (answer.status !== 'error') return { accepted: true };
    return {
      accepted: false,
      errors: answer.errors.length > 0 ? answer.errors : [{ code: 'INTERNAL_ERROR', message: 'the registry refused without naming an error' }],
    };
  }

  submitRegistration(submission: RegistrationSubmission): Promise<Submission> {
    return this.submit('registerDocument', submission.messageId, registerDocumentFields(submission));
  }

  submitDemand(submission: DemandSubmission): Promise<Submission> {
    return this.submit('demandContent', submission.messageId, emdrIdFields(submission.emdrId));
  }

  /** getRegistryItem: the item as the registry describes it; an item it does not know is none. */
  async record(emdrId: string): Promise<RegistryRecord | undefined> {
    const answer = await this.call('getRegistryItem', randomUUID(), emdrIdFields(emdrId));
    if (answer.status === 'error') {
      if (answer.errors.some((error) => error.code === 'REGISTRY_ITEM_NOT_FOUND')) return undefined;
      throw new RegistryUnavailableError(`the registry answered getRegistryItem with ${answer.errors.map((error) => error.code).join(', ') || 'an error'}`);
    }
    return registryItemOf(answer.body);
  }

  /** getRegistryItem: the item's organization and patient; an item the registry does not describe so is none. */
  async currentVersionOwner(emdrId: string): Promise<DocumentOwner | undefined> {
    const item = await this.record(emdrId);
    return item?.organization && item.patientSnils ? { organization: item.organization, patientSnils: item.patientSnils } : undefined;
  }

  /** searchRegistryItem, once per organization when the clinic account acts for several (the registry's search takes one). */
  async search(criteria: RegistrySearch): Promise<RegistryItem[]> {
    const { organizations, limit, ...fields } = criteria;
    const perOrganization =
      fields.organization === undefined && organizations !== undefined
        ? organizations.slice(0, SEARCH_FAN_OUT).map((organization) => ({ ...fields, organization }))
        : [fields];
    if (fields.organization !== undefined && organizations !== undefined && !organizations.includes(fields.organization)) return [];
    const found = await Promise.all(
      perOrganization.map(async (one) => {
        const answer = await this.call('searchRegistryItem', randomUUID(), searchRegistryItemFields(one));
        return answer.status === 'error' ? [] : searchMatches(answer.body);
      }),
    );
    return found
      .flat()
      .sort((a, b) => b.registrationDateTime.localeCompare(a.registrationDateTime))
      .slice(0, limit);
  }

  async receive(sink: OutcomeSink, files: KeptFiles): Promise<{ stop(): Promise<void> }> {
    const { config, connectionLimits, documentLimitBytes, logger } = this.options;
    const listener = await startInbound({
      host: config.callbackHost,
      port: config.callbackPort,
      allowedSources: config.allowedSources,
      limits: connectionLimits,
      documentLimitBytes,
      sink,
      files,
      logger,
    });
    logger.info({ port: listener.port }, "listening for the registry's answers");
    return {
      stop: async () => {
        await listener.stop();
        await this.agent.close();
      },
    };
  }
}

async function answerText(body: AsyncIterable<Buffer> & { destroy(): void }): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of body) {
    length += chunk.length;
    if (length > ANSWER_LIMIT_BYTES) {
      body.destroy();
      throw new RegistryUnavailableError(`the registry's answer is longer than ${ANSWER_LIMIT_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
