import fs from 'node:fs/promises';
import { parseOpenRPCDocument } from '@open-rpc/schema-utils-js';
import type { OpenrpcDocument } from '@open-rpc/schema-utils-js/build/types.js';
import { openRpcSpecPath } from '../config/paths.js';

/** specs/openrpc.json, validated against the OpenRPC meta-schema and dereferenced, as the Router needs it. */
export async function loadOpenRpcDocument(): Promise<OpenrpcDocument> {
  const raw = JSON.parse(await fs.readFile(openRpcSpecPath, 'utf8')) as OpenrpcDocument;
  return parseOpenRPCDocument(raw, { validate: true, dereference: true });
}

/** The versions interface A answers at: the document's own, then the released compatible ones it lists (info.x-compatible-versions). */
export function servedVersions(document: OpenrpcDocument): string[] {
  const compatible = (document.info as { 'x-compatible-versions'?: unknown })['x-compatible-versions'];
  return [document.info.version, ...(Array.isArray(compatible) ? compatible.filter((version): version is string => typeof version === 'string') : [])];
}
