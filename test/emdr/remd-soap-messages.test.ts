import { describe, expect, it } from 'vitest';
import {
  acknowledgement,
  documentFileResponse,
  fault,
  NS,
  readInbound,
  readServiceResponse,
  registerDocumentFields,
  searchMatches,
  serviceRequest,
} from '../../src/emdr/registry/remd/soap-messages.js';
import { childOf, parseXml, textOf } from '../../src/xml/xml.js';

/**
 * The SOAP mapping (src/emdr/registry/remd/soap-messages.ts) against messages shaped as the public
 * samples show them: GitHub bacbkasw/at_4_remd test_searchRegistryItem.py (a request to the test
 * stand and the fields its test reads of the answer, prefixes `ser:` and `ns3:`) and GitHub
 * asaf1n/egisz-monitor tests/test_parser.py (registerDocumentResult in a SOAP 1.1 envelope, prefix
 * `ns2:`, relatesToMessage as an element or an attribute, `registrationDate` in older answers).
 * The XML here is written for these tests in those shapes; the values are the samples' own.
 */

const LIMITS = { maxDepth: 32, maxElements: 1000 };

describe('requests the gateway sends', () => {
  it('carry the envelope, transportHeader, MessageID and Action of the public sample, and the body element <operation>Request', () => {
    const xml = serviceRequest(
      'searchRegistryItem',
      { messageId: '09fa0dfc-a975-42ce-9739-d8afac7df2d0', clientEntityId: '17c74e63-dc38-438d-a27a-a1aa063ee7b8' },
      [],
    );
    const envelope = parseXml(xml, LIMITS);
    expect([envelope.uri, envelope.local]).toEqual(['http://www.w3.org/2003/05/soap-envelope', 'Envelope']);
    const header = childOf(envelope, NS.soap12, 'Header');
    const authInfo = childOf(childOf(header, 'http://egisz.rosminzdrav.ru', 'transportHeader'), 'http://egisz.rosminzdrav.ru', 'authInfo');
    expect(textOf(authInfo, 'http://egisz.rosminzdrav.ru', 'clientEntityId')).toBe('17c74e63-dc38-438d-a27a-a1aa063ee7b8');
    expect(textOf(header, 'http://www.w3.org/2005/08/addressing', 'MessageID')).toBe('09fa0dfc-a975-42ce-9739-d8afac7df2d0');
    expect(textOf(header, 'http://www.w3.org/2005/08/addressing', 'Action')).toBe('searchRegistryItem');
    const body = childOf(envelope, NS.soap12, 'Body')!;
    expect(body.children.map((child) => [child.uri, child.local])).toEqual([['http://egisz.rosminzdrav.ru/iehr/emdr/service/', 'searchRegistryItemRequest']]);
  });

  it("carry a registration's fields by the registry's names, escaped, the SNILS as 11 digits and the signatures in base64", () => {
    const fields = registerDocumentFields({
      messageId: 'ignored',
      localUid: '4a3e9455-22e6-284a-ae64-548188c2c091',
      kind: '58',
      organization: '1.2.643.5.1.13.13.12.2.1.1',
      patientSnils: '91426037586',
      creationDateTime: '2021-09-11T00:00:00+03:00',
      documentNumber: 'КП <1> & "2"',
      signature: Buffer.from([1, 2, 3]),
      personalSignatures: [{ signer: { snils: '087-654-321 02', role: '1' }, signature: 'BAUG' }],
    });
    const request = childOf(
      childOf(parseXml(serviceRequest('registerDocument', { messageId: 'm', clientEntityId: 'c' }, fields), LIMITS), NS.soap12, 'Body'),
      NS.service,
      'registerDocumentRequest',
    )!;
    const read = (name: string) => textOf(request, NS.service, name);
    expect([read('localUid'), read('kind'), read('organization'), read('patientSnils'), read('creationDateTime'), read('documentNumber')]).toEqual([
      '4a3e9455-22e6-284a-ae64-548188c2c091',
      '58',
      '1.2.643.5.1.13.13.12.2.1.1',
      '91426037586',
      '2021-09-11T00:00:00+03:00',
      'КП <1> & "2"',
    ]);
    const items = childOf(request, NS.service, 'signatures')!.children;
    expect(items.map((item) => textOf(item, NS.service, 'signature'))).toEqual(['AQID', 'BAUG']);
    expect(textOf(childOf(items[1], NS.service, 'signer'), NS.service, 'snils')).toBe('08765432102');
    expect(read('replaces')).toBeUndefined();
  });
});

describe('answers the registry gives', () => {
  it('reads searchRegistryItemResponse as the public test reads it, whatever the prefix', () => {
    const answer = `<?xml version="1.0" encoding="UTF-8"?>
      <soap:Envelope xmlns:soap="http://www.w3.org/2003/05/soap-envelope"><soap:Body>
        <ns3:searchRegistryItemResponse xmlns:ns3="http://egisz.rosminzdrav.ru/iehr/emdr/service/">
          <ns3:status>success</ns3:status>
          <ns3:matches><ns3:item>
            <ns3:emdrId>21.09.000000001</ns3:emdrId>
            <ns3:localUid>4a3e9455-22e6-284a-ae64-548188c2c091</ns3:localUid>
            <ns3:registrationDateTime>2021-09-13T17:12:09.896+03:00</ns3:registrationDateTime>
            <ns3:storeTillDate>2046-09-11+03:00</ns3:storeTillDate>
          </ns3:item></ns3:matches>
        </ns3:searchRegistryItemResponse></soap:Body></soap:Envelope>`;
    const response = readServiceResponse(answer, 'searchRegistryItem');
    expect('status' in response && response.status).toBe('success');
    expect(searchMatches((response as { body: Parameters<typeof searchMatches>[0] }).body)).toEqual([
      {
        emdrId: '21.09.000000001',
        localUid: '4a3e9455-22e6-284a-ae64-548188c2c091',
        kind: '',
        organization: '',
        registrationDateTime: '2021-09-13T17:12:09.896+03:00',
        version: 1,
      },
    ]);
  });

  it('reads a SOAP fault as a fault, and refuses what is not a SOAP answer', () => {
    expect(readServiceResponse(fault('1.2', 'Receiver', 'the registry is busy'), 'registerDocument')).toEqual({ fault: 'the registry is busy' });
    expect(() => readServiceResponse('<html><body>502 Bad Gateway</body></html>', 'registerDocument')).toThrow(/not a SOAP envelope/);
    expect(() => readServiceResponse('<a><b></a>', 'registerDocument')).toThrow(/not well-formed/);
  });
});

describe("the registry's calls to the gateway", () => {
  const result = (inner: string, attribute = '') => `<?xml version="1.0"?>
    <soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" xmlns:ns2="http://egisz.rosminzdrav.ru/iehr/emdr/callback/">
      <soap:Body><ns2:registerDocumentResult${attribute}>${inner}</ns2:registerDocumentResult></soap:Body></soap:Envelope>`;

  it('reads a successful registerDocumentResult in a SOAP 1.1 envelope, registrationDate of older answers included', () => {
    const inbound = readInbound(
      result(`<ns2:relatesToMessage>MSG-001</ns2:relatesToMessage><ns2:status>success</ns2:status><ns2:kind>62</ns2:kind>
        <ns2:organization>1.2.643.5.1.13.13.99.99</ns2:organization>
        <ns2:registryItem><ns2:emdrId>EMDR-9</ns2:emdrId><ns2:registrationDate>2024-01-15T10:00:00Z</ns2:registrationDate></ns2:registryItem>`),
    );
    expect(inbound).toEqual({
      version: '1.1',
      message: {
        kind: 'registerDocumentResult',
        relatesToMessage: 'MSG-001',
        status: 'success',
        errors: [],
        registration: { emdrId: 'EMDR-9', registrationDateTime: '2024-01-15T10:00:00Z', registrationWarnings: [] },
      },
    });
  });

  it('reads the errors of a refusal, and relatesToMessage given as an attribute', () => {
    const inbound = readInbound(
      result(
        `<ns2:status>error</ns2:status><ns2:errors><ns2:item><ns2:code>E1</ns2:code><ns2:message>Bad</ns2:message></ns2:item><ns2:item><ns2:code>E2</ns2:code><ns2:message>Worse</ns2:message></ns2:item></ns2:errors>`,
        ' relatesToMessage="ATTR-REL-1"',
      ),
    );
    expect(inbound.message).toEqual({
      kind: 'registerDocumentResult',
      relatesToMessage: 'ATTR-REL-1',
      status: 'error',
      errors: [
        { code: 'E1', message: 'Bad' },
        { code: 'E2', message: 'Worse' },
      ],
    });
  });

  it('refuses a result without relatesToMessage, a DTD, and a body it does not know', () => {
    expect(() => readInbound(result('<ns2:status>success</ns2:status>'))).toThrow(/without relatesToMessage/);
    expect(() => readInbound('<?xml version="1.0"?><!DOCTYPE registerDocumentResult [<!ENTITY xxe "INJECT">]><x/>')).toThrow(/DOCTYPE/);
    expect(() => readInbound(`<soap:Envelope xmlns:soap="${NS.soap12}"><soap:Body><other/></soap:Body></soap:Envelope>`)).toThrow(
      /holds no registerDocumentResult/,
    );
  });

  it('answers with a SOAP acknowledgement, a fault of the version asked in, and a file response around the streamed base64', () => {
    expect(acknowledgement('1.2', 'registerDocumentResult')).toContain('registerDocumentResultResponse');
    expect(fault('1.1', 'Sender', 'x & y')).toMatch(/<faultcode>soap:Client<\/faultcode><faultstring>x &amp; y<\/faultstring>/);
    const parts = documentFileResponse('1.2', true);
    if (typeof parts === 'string') throw new Error('expected the parts of a found document');
    const whole = `${parts.before}PD94bWw=${parts.between}AQID${parts.after}`;
    const document = childOf(childOf(childOf(parseXml(whole, LIMITS), NS.soap12, 'Body'), NS.callback, 'getDocumentFileResponse'), NS.callback, 'document');
    expect([textOf(document, NS.callback, 'content'), textOf(document, NS.callback, 'signature')]).toEqual(['PD94bWw=', 'AQID']);
  });
});
