import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { launchChromium, screenshot } from '../support/browser.js';
import { repoRoot } from '../support/cli.js';
import { startTestService, type TestService } from '../support/service.js';

const run = promisify(execFile);

interface OpenApiOperation {
  summary: string;
  operationId: string;
  tags: string[];
  callbacks?: Record<string, Record<string, { post?: { summary: string; requestBody?: { content: Record<string, { schema: unknown }> } } }>>;
}

interface OpenRpcDocument {
  info: { title: string; version: string };
  methods: Array<{ name: string; tags?: unknown[]; params: unknown[] }>;
  'x-error-codes': Array<{ code: number; message: string }>;
}

type OpenApiDocument = { info: { title: string }; paths: Record<string, Record<string, OpenApiOperation>> };

async function openRpcDocument(): Promise<OpenRpcDocument> {
  return JSON.parse(await fs.readFile(path.join(repoRoot, 'specs/openrpc.json'), 'utf8')) as OpenRpcDocument;
}

async function openApiDocument(): Promise<OpenApiDocument> {
  return parseYaml(await fs.readFile(path.join(repoRoot, 'specs/openapi.yaml'), 'utf8')) as OpenApiDocument;
}

/** A local `$ref` (`#/components/…`) resolved; anything else as it is. */
function resolveRef(document: unknown, value: unknown): unknown {
  const ref = (value as { $ref?: unknown } | undefined)?.$ref;
  if (typeof ref !== 'string') return value;
  return resolveRef(
    document,
    ref
      .slice(2)
      .split('/')
      .reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], document),
  );
}

const tagName = (document: unknown, tag: unknown) => (resolveRef(document, tag) as { name: string }).name;
const contentDescriptorName = (document: unknown, param: unknown) => (resolveRef(document, param) as { name: string }).name;

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
    // Script files of the service only: no inline script (not even by hash), no eval.
    expect(response!.headers()['content-security-policy']).toMatch(/script-src 'self';/);
    expect(response!.headers()['x-content-type-options']).toBe('nosniff');
    return page;
  }

  it('lists every OpenRPC method of interface A, its error codes as a table, and its servers at the host the page came from', async () => {
    const document = await openRpcDocument();
    const page = await openPage('/docs/openrpc');
    await page.getByText(document.info.title).first().waitFor({ timeout: 20_000 });
    const text = await page.locator('#openrpc-docs').innerText();
    for (const method of document.methods) expect(text).toContain(method.name);

    const rows = await page.locator('#error-codes tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    expect(rows.map(([code, message]) => [Number(code), message])).toEqual(document['x-error-codes'].map((entry) => [entry.code, entry.message]));
    expect(rows.find(([code]) => code === '-33000')?.[2]).toContain('exchange-token flow');
    await page.locator('#error-codes').screenshot({ path: path.join(repoRoot, 'test-results', 'docs-interface-a-error-codes.png') });

    // docs-react lists the servers; ours are where this page was served from, not the spec's localhost:8080.
    await page
      .getByText('Servers')
      .first()
      .click()
      .catch(() => undefined);
    const servers = await page.locator('#openrpc-docs').innerText();
    expect(servers).toContain(`${service.publicUrl}/${document.info.version}/`);
    expect(servers).toContain(`${service.internalUrl}/${document.info.version}/`);
    expect(servers).not.toContain('localhost:8080');
    await page.close();
  });

  it('opens every method of interface A: each renders its tags, description, params and result, and the page stays whole', async () => {
    const document = await openRpcDocument();
    const page = await openPage('/docs/openrpc');
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.getByText(document.info.title).first().waitFor({ timeout: 20_000 });
    for (const method of document.methods) {
      const panel = page.locator(`[id="${method.name}"]`);
      const summary = panel.locator('.MuiAccordionSummary-root').first();
      await summary.click();
      // Expanding a method renders the page again: about a second here, and once over 10 s in a CI run on a loaded
      // machine (2026-11-29). Bounded by 30 s, and a method that does not expand says so by name.
      await expect.poll(() => summary.getAttribute('aria-expanded'), { message: `${method.name} expanded`, timeout: 30_000 }).toBe('true');
      // The expanded method: its tag chips by name, its params by name, and its result.
      const details = panel.locator('.MuiAccordion-region').first();
      await details.waitFor({ timeout: 30_000 });
      const shown = await details.innerText();
      for (const tag of method.tags ?? []) expect(shown, method.name).toContain(tagName(document, tag));
      for (const param of method.params) expect(shown, method.name).toContain(contentDescriptorName(document, param));
      expect(shown, method.name).toContain('Result');
      expect(pageErrors, method.name).toEqual([]);
      // The rest of the page is still there (an error in one method used to blank the whole page).
      expect(await page.locator('#error-codes tbody tr').count(), method.name).toBe(document['x-error-codes'].length);
    }
    await screenshot(page, 'docs-interface-a-methods-open');
    await page.close();
  });

  it('lists every OpenAPI operation of interface B', async () => {
    const document = await openApiDocument();
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

  it('opens every operation of interface B from the menu, and every callback of each', async () => {
    const document = await openApiDocument();
    const page = await openPage('/docs/openapi');
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(error.message));
    await page.getByText(document.info.title).first().waitFor({ timeout: 20_000 });
    for (const operation of Object.values(document.paths).flatMap((item) => Object.values(item))) {
      // The menu shows an operation once its tag's group is open.
      const item = page.locator('.menu-content label', { hasText: operation.summary }).first();
      if (!(await item.isVisible())) await page.locator('.menu-content label.-depth1', { hasText: new RegExp(`^${operation.tags[0]}$`) }).click();
      await item.click();
      const section = page.locator(`[data-section-id="operation/${operation.operationId}"]`);
      await expect
        .poll(() => section.evaluate((element) => element.getBoundingClientRect().top), {
          message: `${operation.operationId} scrolled into view`,
          timeout: 20_000,
        })
        .toBeLessThan(200);
      const shown = await section.innerText();
      expect(shown, operation.operationId).toContain(operation.summary);
      expect(shown, operation.operationId).toContain('Responses');
      for (const [name, callback] of Object.entries(operation.callbacks ?? {})) {
        const post = Object.values(callback)[0]!.post!;
        const bodySchemas = section.getByText('Request Body schema');
        const before = await bodySchemas.count();
        await section.locator('button', { hasText: post.summary }).click();
        // Expanded: one more request body (the callback's payload), with the members of its schema.
        await expect.poll(() => bodySchemas.count(), { message: `${operation.operationId} callback ${name} expanded`, timeout: 20_000 }).toBe(before + 1);
        const payload = resolveRef(document, post.requestBody!.content['application/json']!.schema) as { properties: Record<string, unknown> };
        const expanded = await bodySchemas.nth(before).locator('xpath=../..').innerText();
        for (const member of Object.keys(payload.properties)) expect(expanded, `${operation.operationId} callback ${name}`).toContain(member);
      }
    }
    expect(pageErrors).toEqual([]);
    await page.close();
  });

  it('opens on a getting-started page whose two sequence diagrams render, and loads nothing from outside the service', async () => {
    const page = await openPage('/docs/');
    const links = await page.locator('main a').evaluateAll((anchors) => anchors.map((anchor) => anchor.getAttribute('href')));
    expect(links).toEqual(
      expect.arrayContaining(['/docs/openrpc?lang=en', '/docs/openapi?lang=en', '/docs/openrpc.json', '/docs/openapi.yaml', '/console?lang=en']),
    );
    const diagrams = page.locator('svg.sequence-diagram');
    expect(await diagrams.count()).toBe(2);
    const expected: Record<string, string[]> = {
      'interface-a': [
        'End user',
        'Patient app',
        'Authorization server',
        'EHR server (ehr-gateway)',
        'save_exchange_token (internal channel)',
        'embedded_storage.authenticate {exchangeToken, patientProperties}',
        'save_auth_info (internal channel)',
      ],
      'interface-b': [
        'Clinic system (МИС)',
        'ehr-gateway',
        'ЭМД registry',
        'POST /api/RegisterDocument (businessId, user, token)',
        'POST {callbackUrl}/api/SendRegisterDocumentResponse',
        'SendDocumentFileResultResponse {document: content, signature}',
        'loop',
      ],
    };
    for (const [id, texts] of Object.entries(expected)) {
      const diagram = page.locator(`svg#${id}`);
      const rendered = await diagram.evaluate((svg: SVGSVGElement) => ({
        texts: [...svg.querySelectorAll('text')].map((node) => node.textContent),
        arrows: svg.querySelectorAll('.sd-arrow').length,
        box: svg.getBoundingClientRect().toJSON() as { width: number; height: number; right: number },
        figure: svg.closest('figure')!.getBoundingClientRect().toJSON() as { right: number },
        // Every label lies inside the drawing: nothing cut off at an edge.
        outside: [...svg.querySelectorAll('text')]
          .filter((node) => {
            const box = (node as SVGGraphicsElement).getBBox();
            const view = svg.viewBox.baseVal;
            return box.x < view.x || box.x + box.width > view.x + view.width || box.y < view.y || box.y + box.height > view.y + view.height;
          })
          .map((node) => node.textContent),
      }));
      for (const label of texts) expect(rendered.texts, id).toContain(label);
      expect(rendered.arrows, id).toBeGreaterThan(10);
      expect(rendered.box.width, id).toBeGreaterThan(600);
      expect(rendered.box.height, id).toBeGreaterThan(500);
      // Scaled to the page, not cut at the figure's edge.
      expect(rendered.box.right, id).toBeLessThanOrEqual(rendered.figure.right);
      expect(rendered.outside, id).toEqual([]);
    }
    await screenshot(page, 'docs-getting-started');
    await page.close();
    expect(blockedRequests).toEqual([]);
    expect(policyViolations).toEqual([]);
  });
});
