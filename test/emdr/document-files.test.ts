import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startClinicReceiver, type ClinicReceiver } from '../../examples/clinic-receiver/receiver.js';
import { signWebhook } from '../../src/callbacks/signing.js';
import { runCli } from '../support/cli.js';
import { FIXTURE_SIGNATURE, FIXTURE_XML } from '../support/emdr.js';

/** Issue 21, L6: a medical document written to disk is its owner's alone: files 0600, folders made for them 0700. */

const mode = async (file: string) => (await fs.stat(file)).mode & 0o777;

const fileCallback = {
  queueMessageId: '6a1f9f3e-4d7c-4b8a-9c2e-0d3b5a7e9f10',
  clientMessageId: '0b6c1f0e-5a2d-4c3b-8e9f-1a2b3c4d5e6f',
  emdrId: '26.11.000000001',
  status: 'success',
  document: {
    localUid: '2f0c3c56-6a6e-4a1e-9d55-0c1b3d7a8e21',
    kind: '6',
    version: 1,
    fileName: 'consultation.xml',
    content: FIXTURE_XML.toString('base64'),
    signature: FIXTURE_SIGNATURE.toString('base64'),
  },
};

describe('L6: documents saved private', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ehr-gateway-l6-'));
  });

  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('document save writes the files 0600 into a folder it makes 0700, and makes an existing file 0600', async () => {
    const callback = path.join(dir, 'callback.json');
    await fs.writeFile(callback, JSON.stringify(fileCallback));
    const out = path.join(dir, 'saved', 'documents');
    await fs.mkdir(path.join(dir, 'saved'), { mode: 0o755 });
    await fs.writeFile(path.join(dir, 'saved', 'preexisting'), '');
    const result = await runCli(['document', 'save', callback, '--out', out]);
    expect(result.code, result.stderr).toBe(0);
    // Before: 0644 files in a 0755 folder.
    expect(await mode(out)).toBe(0o700);
    expect(await mode(path.join(out, 'consultation.xml'))).toBe(0o600);
    expect(await mode(path.join(out, 'consultation.xml.sig'))).toBe(0o600);
    await fs.chmod(path.join(out, 'consultation.xml'), 0o644);
    expect((await runCli(['document', 'save', callback, '--out', out])).code).toBe(0);
    expect(await mode(path.join(out, 'consultation.xml'))).toBe(0o600);
  });

  it('the example clinic receiver saves the documents it receives 0600 in a folder it makes 0700', async () => {
    const documentsDir = path.join(dir, 'received', 'files');
    const secret = 'whsec_ZGVtby1zaWduaW5nLXNlY3JldC1ub3QtZm9yLXByb2R1Y3Rpb24=';
    const receiver: ClinicReceiver = await startClinicReceiver({ signingSecret: secret, documentsDir });
    try {
      const body = JSON.stringify(fileCallback);
      const timestamp = Math.floor(Date.now() / 1000);
      const response = await fetch(`${receiver.url}/api/SendDocumentFileResultResponse`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'webhook-id': 'msg_l6',
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signWebhook(secret, 'msg_l6', timestamp, body),
        },
        body,
      });
      expect(await response.json()).toEqual({ status: 'Success' });
      const [saved] = receiver.savedDocuments;
      expect(await mode(documentsDir)).toBe(0o700);
      expect(await mode(saved!)).toBe(0o600);
      expect(await mode(`${saved!}.sig`)).toBe(0o600);
    } finally {
      await receiver.close();
    }
  });
});
