import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { launchChromium } from '../support/browser.js';
import { repoRoot } from '../support/cli.js';
import { startTestService, type TestService } from '../support/service.js';

const run = promisify(execFile);

interface OpenApiOperation {
  summary?: string;
  operationId?: string;
}

/** The /docs pages, opened in real headless Chromium, list every method and operation of the specs. */
describe('published documentation at /docs', () => {
  let service: TestService;
  let browser: Browser;
  const blockedRequests: string[] = [];
  const policyViolations: string[] = [];

  beforeAll(async () => {
    await run(process.execPath, ['--import', 'tsx', 'scripts/build-docs.ts'], { cwd: repoRoot });
    service = await startTestService({}, ['ehr', 'emdr']);
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  async function openPage(route: string) {
    const page = await browser.newPage();
    // Everything must come from the service itself: note any request elsewhere (a CDN).
    page.on('request', (request) => {
      const url = request.url();
      const local = url.startsWith(service.publicUrl) || url.startsWith(`blob:${service.publicUrl}`) || url.startsWith('data:');
      if (!local) blockedRequests.push(url);
    });
    // The Content-Security-Policy of /docs must let the renderers work: note anything it blocks.
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) policyViolations.push(message.text());
    });
    const response = await page.goto(`${service.publicUrl}${route}`);
    expect(response!.headers()['content-security-policy']).toMatch(/script-src 'self'/);
    expect(response!.headers()['x-content-type-options']).toBe('nosniff');
    return page;
  }

  it('lists every OpenRPC method of interface A', async () => {
    const document = JSON.parse(await fs.readFile(path.join(repoRoot, 'specs/openrpc.json'), 'utf8')) as { info: { title: string }; methods: Array<{ name: string }> };
    const page = await openPage('/docs/openrpc');
    await page.getByText(document.info.title).first().waitFor({ timeout: 20_000 });
    const text = await page.locator('#openrpc-docs').innerText();
    for (const method of document.methods) expect(text).toContain(method.name);
    await page.close();
  });

  it('lists every OpenAPI operation of interface B', async () => {
    const document = parseYaml(await fs.readFile(path.join(repoRoot, 'specs/openapi.yaml'), 'utf8')) as { info: { title: string }; paths: Record<string, Record<string, OpenApiOperation>> };
    const page = await openPage('/docs/openapi');
    await page.getByText(document.info.title).first().waitFor({ timeout: 20_000 });
    const text = await page.locator('#redoc').innerText();
    const operations = Object.values(document.paths).flatMap((item) => Object.values(item));
    expect(operations.length).toBeGreaterThan(0);
    for (const operation of operations) expect(text).toContain(operation.summary);
    // The examples reach the samples: a request body's (its schema's `examples`: a sample made from the schema would
    // put patientSnils after emdrId) and an answer's (a components/examples ref: one made from the schema would read "ok").
    expect(text).toContain('"emdrId": "26.11.000000154",\n"clientMessageId": "5b0f3c1e-7d2a-4c9b-8e6f-1a2b3c4d5e6f"');
    expect(text).toContain('"status": "ready"');
    await page.close();
  });

  it('links both pages from /docs and loads nothing from outside the service', async () => {
    const page = await openPage('/docs/');
    const links = await page.locator('main a').evaluateAll((anchors) => anchors.map((anchor) => anchor.getAttribute('href')));
    expect(links).toEqual(expect.arrayContaining(['/docs/openrpc', '/docs/openapi', '/docs/openrpc.json', '/docs/openapi.yaml']));
    await page.close();
    expect(blockedRequests).toEqual([]);
    expect(policyViolations).toEqual([]);
  });
});
