/**
 * The SOAP messages exchanged with the federal registry (РЭМД), every element in this one file.
 * No official WSDL is public: each element below names the public material it was taken from, and
 * what no public material shows is marked UNVERIFIED, the gateway's own guess, kept here so that
 * aligning with the official WSDL is a change of this file only. Sources:
 *
 * [AT4] GitHub bacbkasw/at_4_remd, test_searchRegistryItem.py (commits 6b064ff and 18a579b): a
 *       searchRegistryItem exchange with the registry's test stand (remd-dev.rt-eu.ru/port/emdr):
 *       SOAP 1.2 envelope, `application/soap+xml;charset=UTF-8`, the transportHeader, WS-Addressing
 *       MessageID (a bare UUID) and Action, the request's fields and the response's status and matches.
 * [EGM] GitHub asaf1n/egisz-monitor, egisz-monitor-corp/egisz_monitor_corp/parser.py and
 *       tests/test_parser.py: the registry's asynchronous registerDocumentResult as a МИС receives it.
 * [ETL] the same repository, backend/src/services/etl.service.ts and its SQL of error
 *       interpretations: a МИС serves getDocumentFile; acknowledgements carry a success status.
 * [305] classifier 1.2.643.5.1.13.13.99.2.305 v3.18 (src/emdr/errors/codes.ts): the codes of errors.
 * [ISSUE] the gateway's issue 19, which lists the fields of registerDocumentResult's registryItem
 *       (storeTillDate, registrationWarnings) beyond [EGM]'s, with no public source given.
 */
import { randomUUID } from 'node:crypto';
import type { PersonalSigner, RegistryErrorItem, RegistryItem, RegistrySearch, RegistrationSubmission } from '../port.js';
import { buildXml, childOf, childrenOf, node, parseXml, textOf, XmlError, type XmlElement, type XmlLimits, type XmlNode } from '../../../xml/xml.js';

export const NS = {
  /** SOAP 1.2 envelope [AT4]. */
  soap12: 'http://www.w3.org/2003/05/soap-envelope',
  /** SOAP 1.1 envelope: [EGM]'s test fixtures wrap registerDocumentResult in it, so an inbound 1.1 envelope is read too. */
  soap11: 'http://schemas.xmlsoap.org/soap/envelope/',
  /** WS-Addressing: MessageID, Action [AT4]. */
  wsa: 'http://www.w3.org/2005/08/addressing',
  /** transportHeader/authInfo/clientEntityId [AT4]. */
  egisz: 'http://egisz.rosminzdrav.ru',
  /** The registry's service: the requests the gateway sends and their responses [AT4]. */
  service: 'http://egisz.rosminzdrav.ru/iehr/emdr/service/',
  /** The registry's calls to the sending system [EGM]. */
  callback: 'http://egisz.rosminzdrav.ru/iehr/emdr/callback/',
  xml: 'http://www.w3.org/XML/1998/namespace',
} as const;

/** [AT4] sends `application/soap+xml;charset=UTF-8`, SOAP 1.2's media type. */
export const SOAP12_CONTENT_TYPE = 'application/soap+xml; charset=utf-8';
const SOAP11_CONTENT_TYPE = 'text/xml; charset=utf-8';

/** Bounds of a message the gateway reads: a SOAP message is shallow; a file's text is one element. */
export const MESSAGE_LIMITS: XmlLimits = { maxDepth: 32, maxElements: 10_000 };

/** The registry's operations the gateway calls. [AT4] shows searchRegistryItem; the issue names the others (UNVERIFIED names). */
export type ServiceOperation = 'registerDocument' | 'searchRegistryItem' | 'getRegistryItem' | 'demandContent';

// ---------------------------------------------------------------------------------------------
// Requests the gateway sends

/**
 * A request of the service: the envelope [AT4], its header (transportHeader/authInfo/clientEntityId,
 * wsa:MessageID, wsa:Action [AT4]) and the body element `<operation>Request` in the service
 * namespace (searchRegistryItemRequest [AT4]; the others by the same pattern, UNVERIFIED).
 * wsa:Action: [AT4]'s sample sends `getSignature`, evidently not checked by the test stand; the
 * gateway sends the operation's name (UNVERIFIED).
 */
export function serviceRequest(
  operation: ServiceOperation,
  header: { messageId: string; clientEntityId: string },
  fields: ReadonlyArray<XmlNode | undefined>,
): string {
  return buildXml(
    node(NS.soap12, 'soap:Envelope', [
      node(NS.soap12, 'soap:Header', [
        node(NS.egisz, 'egis:transportHeader', [node(NS.egisz, 'egis:authInfo', [node(NS.egisz, 'egis:clientEntityId', header.clientEntityId)])]),
        node(NS.wsa, 'wsa:MessageID', header.messageId),
        node(NS.wsa, 'wsa:Action', operation),
      ]),
      node(NS.soap12, 'soap:Body', [node(NS.service, `ser:${operation}Request`, fields)]),
    ]),
  );
}

const field = (name: string, value: string | undefined) => node(NS.service, `ser:${name}`, value);

/**
 * registerDocumentRequest. localUid [EGM: registerDocumentResult/localUid], kind and organization
 * [AT4, EGM], patientSnils as 11 digits [AT4: `91426037586`], creationDateTime [EGM:
 * registryItem/creationDateTime] as an instant with its offset [AT4: `2021-09-11T00:00:00+03:00`].
 * UNVERIFIED: documentNumber, replaces (a new version's predecessor), and signatures/item
 * {signer{snils, role}, signature}: the organization's detached signature first (no signer), then
 * each personal one, base64. The document itself is not sent: the registry pulls it
 * (getDocumentFile, [ETL]).
 */
export function registerDocumentFields(submission: RegistrationSubmission): XmlNode[] {
  // The signer block's names and order, and `checksum`, as issue 20 lists the registry's (UNVERIFIED against a WSDL).
  const signature = (base64: string, checksum: string | undefined, signer?: PersonalSigner) =>
    node(NS.service, 'ser:item', [
      signer &&
        node(NS.service, 'ser:signer', [
          field('localId', signer.localId),
          field('lastName', signer.lastName),
          field('firstName', signer.firstName),
          field('middleName', signer.middleName),
          field('snils', signer.snils.replace(/[^0-9]/g, '')),
          field('role', signer.role),
          field('position', signer.position),
          field('speciality', signer.speciality),
          field('department', signer.department),
        ]),
      field('signature', base64),
      field('checksum', checksum),
    ]);
  return [
    field('localUid', submission.localUid),
    field('kind', submission.kind),
    field('organization', submission.organization),
    field('patientSnils', submission.patientSnils),
    field('creationDateTime', submission.creationDateTime),
    field('documentNumber', submission.documentNumber),
    field('replaces', submission.replaces),
    node(NS.service, 'ser:signatures', [
      signature(submission.signature.toString('base64'), submission.signatureChecksum),
      ...submission.personalSignatures.map((personal) => signature(personal.signature, personal.checksum, personal.signer)),
    ]),
  ].filter((element): element is XmlNode => element !== undefined);
}

/** searchRegistryItemRequest [AT4]: organization, kind, registerDateBegin, registerDateEnd, patientSnils; localUid UNVERIFIED. */
export function searchRegistryItemFields(criteria: Omit<RegistrySearch, 'organizations' | 'limit'>): Array<XmlNode | undefined> {
  return [
    field('organization', criteria.organization),
    field('kind', criteria.kind),
    field('localUid', criteria.localUid),
    field('registerDateBegin', criteria.registerDateBegin),
    field('registerDateEnd', criteria.registerDateEnd),
    field('patientSnils', criteria.patientSnils),
  ];
}

/** getRegistryItemRequest, demandContentRequest: the registry item's emdrId (UNVERIFIED). */
export const emdrIdFields = (emdrId: string): XmlNode[] => [node(NS.service, 'ser:emdrId', emdrId)];

// ---------------------------------------------------------------------------------------------
// Responses to the gateway's requests

/** The registry's answer to a request: a SOAP fault, or the body element `<operation>Response`. */
export type ServiceResponse = { fault: string } | { status: 'success' | 'error' | undefined; errors: RegistryErrorItem[]; body: XmlElement };

/** `errors/item{code, message}` [EGM]; the codes are the classifier's [305]. */
function errorsOf(element: XmlElement | undefined, uri: string): RegistryErrorItem[] {
  return childrenOf(childOf(element, uri, 'errors'), uri, 'item').map((item) => ({
    code: textOf(item, uri, 'code') ?? 'INTERNAL_ERROR',
    message: (textOf(item, uri, 'message') ?? '').slice(0, 1000),
  }));
}

/** The envelope's Body, SOAP 1.2 or 1.1; throws XmlError for anything else. */
function bodyOf(envelope: XmlElement): { version: SoapVersion; body: XmlElement } {
  const version = envelope.uri === NS.soap12 ? '1.2' : envelope.uri === NS.soap11 ? '1.1' : undefined;
  if (envelope.local !== 'Envelope' || !version) throw new XmlError('not a SOAP envelope');
  const body = childOf(envelope, envelope.uri, 'Body');
  if (!body) throw new XmlError('the envelope has no Body');
  return { version, body };
}

/** A SOAP 1.2 Fault's Reason/Text, or a 1.1 fault's faultstring. */
function faultText(fault: XmlElement, version: SoapVersion): string {
  const text = version === '1.2' ? textOf(childOf(fault, NS.soap12, 'Reason'), NS.soap12, 'Text') : textOf(fault, '', 'faultstring');
  return (text ?? 'no reason given').slice(0, 300);
}

/**
 * The response to `operation`: `<operation>Response` in the service namespace with `status`
 * (`success` [AT4], or `error` with errors/item [EGM]; UNVERIFIED for the operations other than
 * searchRegistryItem), or a Fault.
 */
export function readServiceResponse(text: string, operation: ServiceOperation): ServiceResponse {
  const { version, body } = bodyOf(parseXml(text, MESSAGE_LIMITS));
  const fault = childOf(body, version === '1.2' ? NS.soap12 : NS.soap11, 'Fault');
  if (fault) return { fault: faultText(fault, version) };
  const response = childOf(body, NS.service, `${operation}Response`);
  if (!response) throw new XmlError(`the answer has no ${operation}Response`);
  const status = textOf(response, NS.service, 'status')?.toLowerCase();
  return { status: status === 'success' || status === 'error' ? status : undefined, errors: errorsOf(response, NS.service), body: response };
}

/** A registry item as the registry describes it: [AT4] reads localUid, registrationDateTime, storeTillDate; the rest UNVERIFIED. */
function itemOf(item: XmlElement): (RegistryItem & { patientSnils?: string; storeTillDate?: string }) | undefined {
  const read = (name: string) => textOf(item, NS.service, name);
  const emdrId = read('emdrId');
  const localUid = read('localUid');
  if (emdrId === undefined || localUid === undefined) return undefined;
  const version = Number(read('version') ?? '1');
  const storeTillDate = read('storeTillDate');
  const patientSnils = read('patientSnils');
  return {
    emdrId,
    localUid,
    kind: read('kind') ?? '',
    organization: read('organization') ?? '',
    registrationDateTime: read('registrationDateTime') ?? '',
    version: Number.isSafeInteger(version) && version >= 1 ? version : 1,
    ...(storeTillDate === undefined ? {} : { storeTillDate }),
    ...(patientSnils === undefined ? {} : { patientSnils: patientSnils.replace(/[^0-9]/g, '') }),
  };
}

/** searchRegistryItemResponse/matches/item [AT4]. */
export function searchMatches(response: XmlElement): RegistryItem[] {
  return childrenOf(childOf(response, NS.service, 'matches'), NS.service, 'item').flatMap((item) => {
    const found = itemOf(item);
    return found
      ? [
          {
            emdrId: found.emdrId,
            localUid: found.localUid,
            kind: found.kind,
            organization: found.organization,
            registrationDateTime: found.registrationDateTime,
            version: found.version,
          },
        ]
      : [];
  });
}

/** getRegistryItemResponse/item (UNVERIFIED: the item of searchRegistryItemResponse [AT4], with organization and patientSnils). */
export function registryItemOf(response: XmlElement): ReturnType<typeof itemOf> {
  const item = childOf(response, NS.service, 'item');
  return item && itemOf(item);
}

// ---------------------------------------------------------------------------------------------
// The registry's calls to the gateway (POST /emdr/callback)

export type SoapVersion = '1.1' | '1.2';

/** What the registry sends the gateway, read. */
export type InboundMessage =
  | {
      kind: 'registerDocumentResult';
      relatesToMessage: string;
      status: 'success' | 'error';
      registration?: { emdrId: string; registrationDateTime: string; storeTillDate?: string; registrationWarnings: RegistryErrorItem[] };
      errors: RegistryErrorItem[];
    }
  | {
      kind: 'demandContentResult';
      relatesToMessage: string;
      status: 'success' | 'error';
      document?: {
        emdrId: string;
        localUid: string;
        kind: string;
        version: number;
        fileName: string;
        organization: string;
        patientSnils: string;
        content: Buffer;
        signature: Buffer;
      };
      errors: RegistryErrorItem[];
    }
  | { kind: 'getDocumentFile'; localUid: string; organization: string };

const BASE64 = /^[A-Za-z0-9+/\s]*={0,2}\s*$/;
const decode = (text: string | undefined): Buffer | undefined => (text !== undefined && BASE64.test(text) ? Buffer.from(text, 'base64') : undefined);

/**
 * The `relatesToMessage` of a result [EGM]: the wsa:MessageID of the request it answers, as an
 * element, or as an attribute of the result element ([EGM]'s test of late answers).
 */
function relatesToMessage(result: XmlElement): string | undefined {
  return textOf(result, NS.callback, 'relatesToMessage') ?? result.attributes.relatesToMessage?.trim();
}

/** success | error [EGM]; with errors and no status, error. */
function resultStatus(result: XmlElement): 'success' | 'error' {
  return textOf(result, NS.callback, 'status')?.toLowerCase() === 'success' ? 'success' : 'error';
}

/**
 * registerDocumentResult [EGM]: relatesToMessage, status, registryItem{emdrId, registrationDateTime
 * (`registrationDate` in older answers [EGM])}, errors/item{code, message}; registryItem's
 * storeTillDate and registrationWarnings/item{code, message} [ISSUE].
 */
function readRegisterDocumentResult(result: XmlElement): InboundMessage {
  const relates = relatesToMessage(result);
  if (relates === undefined) throw new XmlError('registerDocumentResult without relatesToMessage');
  const item = childOf(result, NS.callback, 'registryItem');
  const emdrId = textOf(item, NS.callback, 'emdrId');
  const registrationDateTime = textOf(item, NS.callback, 'registrationDateTime') ?? textOf(item, NS.callback, 'registrationDate');
  const storeTillDate = textOf(item, NS.callback, 'storeTillDate');
  const status = resultStatus(result);
  return {
    kind: 'registerDocumentResult',
    relatesToMessage: relates,
    status,
    errors: errorsOf(result, NS.callback),
    ...(status === 'success' && emdrId !== undefined
      ? {
          registration: {
            emdrId,
            registrationDateTime: registrationDateTime ?? new Date().toISOString(),
            ...(storeTillDate === undefined ? {} : { storeTillDate }),
            registrationWarnings: childrenOf(childOf(item, NS.callback, 'registrationWarnings'), NS.callback, 'item').map((warning) => ({
              code: textOf(warning, NS.callback, 'code') ?? 'WARNING',
              message: (textOf(warning, NS.callback, 'message') ?? '').slice(0, 1000),
            })),
          },
        }
      : {}),
  };
}

/**
 * The file a demandContent asked for, delivered to the requesting system (UNVERIFIED as a whole:
 * the issue says the registry delivers it asynchronously; no public sample shows the message): the
 * element `demandContentResult` in the callback namespace, named after registerDocumentResult, with
 * relatesToMessage, status and errors as it [EGM], and document{emdrId, localUid, kind, version,
 * fileName, organization, patientSnils, content, signature} (base64 content and signature).
 */
function readDemandContentResult(result: XmlElement): InboundMessage {
  const relates = relatesToMessage(result);
  if (relates === undefined) throw new XmlError('demandContentResult without relatesToMessage');
  const status = resultStatus(result);
  const document = childOf(result, NS.callback, 'document');
  const read = (name: string) => textOf(document, NS.callback, name);
  const content = decode(read('content'));
  const signature = decode(read('signature')) ?? Buffer.alloc(0);
  const emdrId = read('emdrId');
  const localUid = read('localUid');
  const organization = read('organization');
  const patientSnils = read('patientSnils');
  const complete = content !== undefined && emdrId !== undefined && localUid !== undefined && organization !== undefined && patientSnils !== undefined;
  const version = Number(read('version') ?? '1');
  return {
    kind: 'demandContentResult',
    relatesToMessage: relates,
    status: status === 'success' && !complete ? 'error' : status,
    errors:
      status === 'success' && !complete
        ? [{ code: 'FILE_WAS_NOT_SENT', message: 'the registry delivered no complete document' }]
        : errorsOf(result, NS.callback),
    ...(status === 'success' && complete
      ? {
          document: {
            emdrId,
            localUid,
            kind: read('kind') ?? '',
            version: Number.isSafeInteger(version) && version >= 1 ? version : 1,
            fileName: read('fileName') ?? `${emdrId}.xml`,
            organization,
            patientSnils: patientSnils.replace(/[^0-9]/g, ''),
            content,
            signature,
          },
        }
      : {}),
  };
}

/**
 * getDocumentFile: the registry pulls a registered document from the providing system [ETL: "проверьте
 * доступность getDocumentFile"; "ИС не передала файл ЭМД в ответе getDocumentFile"]. Its message is
 * UNVERIFIED: `getDocumentFileRequest` in the callback namespace with the document's localUid and
 * organization (how the providing system knows its document).
 */
function readGetDocumentFile(request: XmlElement): InboundMessage {
  const localUid = textOf(request, NS.callback, 'localUid');
  const organization = textOf(request, NS.callback, 'organization');
  if (localUid === undefined || organization === undefined) throw new XmlError('getDocumentFileRequest needs localUid and organization');
  return { kind: 'getDocumentFile', localUid, organization };
}

const INBOUND: Record<string, (element: XmlElement) => InboundMessage> = {
  registerDocumentResult: readRegisterDocumentResult,
  demandContentResult: readDemandContentResult,
  getDocumentFileRequest: readGetDocumentFile,
};

/** A message of the registry, by its body element; throws XmlError for anything the gateway does not take. */
export function readInbound(text: string): { version: SoapVersion; message: InboundMessage } {
  const { version, body } = bodyOf(parseXml(text, MESSAGE_LIMITS));
  const element = body.children.find((child) => child.uri === NS.callback && INBOUND[child.local] !== undefined);
  if (!element) throw new XmlError(`the Body holds no registerDocumentResult, demandContentResult or getDocumentFileRequest of ${NS.callback}`);
  return { version, message: INBOUND[element.local]!(element) };
}

// ---------------------------------------------------------------------------------------------
// The gateway's answers to the registry's calls

const envelopeNs = (version: SoapVersion) => (version === '1.2' ? NS.soap12 : NS.soap11);

export const contentTypeOf = (version: SoapVersion) => (version === '1.2' ? SOAP12_CONTENT_TYPE : SOAP11_CONTENT_TYPE);

function envelope(version: SoapVersion, body: XmlNode): string {
  const uri = envelopeNs(version);
  return buildXml(node(uri, 'soap:Envelope', [node(uri, 'soap:Body', [body])]));
}

/**
 * The acknowledgement of a result: `<result>Response{status: success}` in the callback namespace
 * (UNVERIFIED: [ETL] finds a success status in the registry's logs of acknowledgements).
 */
export function acknowledgement(version: SoapVersion, kind: 'registerDocumentResult' | 'demandContentResult'): string {
  return envelope(version, node(NS.callback, `cb:${kind}Response`, [node(NS.callback, 'cb:status', 'success')]));
}

/**
 * A fault: SOAP 1.2 Code/Value (Sender: the message is at fault; Receiver: the gateway is) and
 * Reason/Text; SOAP 1.1 faultcode (Client, Server) and faultstring.
 */
export function fault(version: SoapVersion, code: 'Sender' | 'Receiver', reason: string): string {
  if (version === '1.2') {
    return envelope(
      version,
      node(NS.soap12, 'soap:Fault', [
        node(NS.soap12, 'soap:Code', [node(NS.soap12, 'soap:Value', `soap:${code}`)]),
        { uri: NS.soap12, name: 'soap:Reason', content: [{ uri: NS.soap12, name: 'soap:Text', content: reason, attributes: [[NS.xml, 'xml:lang', 'en']] }] },
      ]),
    );
  }
  return envelope(
    version,
    node(NS.soap11, 'soap:Fault', [node('', 'faultcode', `soap:${code === 'Sender' ? 'Client' : 'Server'}`), node('', 'faultstring', reason)]),
  );
}

/**
 * getDocumentFileResponse (UNVERIFIED, by the pattern of the service's responses): status success
 * and document{content, signature} in base64, or status error with errors/item [EGM] — a document
 * the gateway no longer keeps is REGISTRY_ITEM_NOT_FOUND [305; ETL: "Запрашиваемая запись ЭМД не
 * найдена в предоставляющей ИС"]. The two files' base64 is streamed into the text of their elements
 * (it needs no escaping): the answer comes as the XML before, between and after them.
 */
export function documentFileResponse(version: SoapVersion, found: boolean): { before: string; between: string; after: string } | string {
  const element = (content: XmlNode[]) => node(NS.callback, 'cb:getDocumentFileResponse', content);
  if (!found) {
    return envelope(
      version,
      element([
        node(NS.callback, 'cb:status', 'error'),
        node(NS.callback, 'cb:errors', [
          node(NS.callback, 'cb:item', [
            node(NS.callback, 'cb:code', 'REGISTRY_ITEM_NOT_FOUND'),
            node(NS.callback, 'cb:message', 'the providing system keeps no such document any more'),
          ]),
        ]),
      ]),
    );
  }
  const marker = `file-${randomUUID()}`;
  const xml = envelope(
    version,
    element([
      node(NS.callback, 'cb:status', 'success'),
      node(NS.callback, 'cb:document', [node(NS.callback, 'cb:content', marker), node(NS.callback, 'cb:signature', marker)]),
    ]),
  );
  const [before, between, after] = xml.split(marker) as [string, string, string];
  return { before, between, after };
}
