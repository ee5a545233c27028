import { DOMImplementation, XMLSerializer, type Document, type Element } from '@xmldom/xmldom';
import { SaxesParser } from 'saxes';

/**
 * XML for the SOAP messages of the registry (src/emdr/registry/remd/): parsed by saxes (the
 * streaming, namespace-aware parser the document check uses too: no DOM, no DTD, no entity
 * expansion, and bounds on depth and element count checked as it reads) into a small tree that
 * names elements by namespace URI and local name, so a sender's prefixes do not matter; built with
 * @xmldom/xmldom's W3C DOM (createElementNS, XMLSerializer), which declares the namespaces and
 * escapes every text and attribute: no XML is written by hand.
 */

export interface XmlElement {
  uri: string;
  local: string;
  /** Attributes by local name (the SOAP messages here use none that are namespaced). */
  attributes: Record<string, string>;
  children: XmlElement[];
  /** The element's own text (its text and CDATA children joined). */
  text: string;
}

export interface XmlLimits {
  maxDepth: number;
  maxElements: number;
}

/** The text is not XML, or not XML the limits allow. */
export class XmlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'XmlError';
  }
}

/** Parses a whole document into its root element; throws XmlError. */
export function parseXml(text: string, limits: XmlLimits): XmlElement {
  const parser = new SaxesParser({ xmlns: true });
  const stack: XmlElement[] = [];
  let root: XmlElement | undefined;
  let elements = 0;
  let failure: string | undefined;
  const fail = (message: string) => {
    failure ??= message;
    throw new XmlError(message);
  };
  parser.on('doctype', () => fail('a DOCTYPE is not allowed'));
  parser.on('opentag', (tag) => {
    elements += 1;
    if (elements > limits.maxElements) fail(`more than ${limits.maxElements} elements`);
    if (stack.length >= limits.maxDepth) fail(`elements nested deeper than ${limits.maxDepth} levels`);
    const attributes: Record<string, string> = {};
    for (const attribute of Object.values(tag.attributes))
      if (attribute.uri !== 'http://www.w3.org/2000/xmlns/' && attribute.prefix !== 'xmlns') attributes[attribute.local] = attribute.value;
    const element: XmlElement = { uri: tag.uri, local: tag.local, attributes, children: [], text: '' };
    if (stack.length > 0) stack[stack.length - 1]!.children.push(element);
    else root = element;
    stack.push(element);
  });
  parser.on('closetag', () => {
    stack.pop();
  });
  const appendText = (value: string) => {
    if (stack.length > 0) stack[stack.length - 1]!.text += value;
  };
  parser.on('text', appendText);
  parser.on('cdata', appendText);
  parser.on('error', (error) => fail(`not well-formed XML: ${error.message.split('\n')[0]}`));
  try {
    parser.write(text).close();
  } catch (error) {
    if (error instanceof XmlError) throw error;
    throw new XmlError(failure ?? `not well-formed XML: ${(error as Error).message.split('\n')[0]}`);
  }
  if (!root) throw new XmlError('no root element');
  return root;
}

/** The first child element of `element` named {uri}local. */
export function childOf(element: XmlElement | undefined, uri: string, local: string): XmlElement | undefined {
  return element?.children.find((child) => child.uri === uri && child.local === local);
}

/** Every child element of `element` named {uri}local. */
export function childrenOf(element: XmlElement | undefined, uri: string, local: string): XmlElement[] {
  return element?.children.filter((child) => child.uri === uri && child.local === local) ?? [];
}

/** The trimmed text of the child {uri}local, or undefined when it is missing or empty. */
export function textOf(element: XmlElement | undefined, uri: string, local: string): string | undefined {
  const text = childOf(element, uri, local)?.text.trim();
  return text === undefined || text === '' ? undefined : text;
}

/** A content of an element to build: text, or child elements (undefined ones are left out). */
export type XmlContent = string | ReadonlyArray<XmlNode | undefined>;

/** An element to build: namespace, qualified name (`prefix:local`, the prefix declared where first used), content. */
export interface XmlNode {
  uri: string;
  name: string;
  content?: XmlContent;
  /** Attributes: namespace (null for none), qualified name, value. */
  attributes?: ReadonlyArray<readonly [string | null, string, string]>;
}

/** Shorthand for an XmlNode; undefined content (an optional field not given) leaves the element out. */
export function node(uri: string, name: string, content: XmlContent): XmlNode;
export function node(uri: string, name: string, content: XmlContent | undefined): XmlNode | undefined;
export function node(uri: string, name: string, content: XmlContent | undefined): XmlNode | undefined {
  return content === undefined ? undefined : { uri, name, content };
}

function append(document: Document, parent: Element, content: XmlContent | undefined): void {
  if (content === undefined) return;
  if (typeof content === 'string') {
    parent.appendChild(document.createTextNode(content));
    return;
  }
  for (const child of content) {
    if (!child) continue;
    const element = document.createElementNS(child.uri, child.name);
    for (const [uri, name, value] of child.attributes ?? []) element.setAttributeNS(uri, name, value);
    parent.appendChild(element);
    append(document, element, child.content);
  }
}

/** The document whose root is `root`, serialized as UTF-8 XML with its declaration. */
export function buildXml(root: XmlNode): string {
  const document = new DOMImplementation().createDocument(root.uri, root.name, null);
  document.insertBefore(document.createProcessingInstruction('xml', 'version="1.0" encoding="UTF-8"'), document.documentElement);
  append(document, document.documentElement!, root.content);
  return new XMLSerializer().serializeToString(document);
}
