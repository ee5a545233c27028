import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { launchChromium, screenshot } from '../support/browser.js';
import { startCallbackReceiver, SUCCESS, type CallbackReceiver } from '../support/callback-receiver.js';
import { repoRoot } from '../support/cli.js';
import { addClinic, authHeaders, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';
import { until } from '../support/until.js';

const run = promisify(execFile);

/**
 * The delivery console at /console in real headless Chromium, against a live service and the
 * reference receiver: a clinic signs in, finds its failed callback with every attempt, replays it
 * and sees it delivered.
 */
describe('the delivery console', () => {
  let service: TestService;
  let receiver: CallbackReceiver;
  let browser: Browser;
  let clinic: CreatedClinicAccount;
  let failingLocalUid: string | undefined;
  const blockedRequests: string[] = [];
  const policyViolations: string[] = [];

  beforeAll(async () => {
    await run(process.execPath, ['--import', 'tsx', 'scripts/build-docs.ts'], { cwd: repoRoot });
    receiver = await startCallbackReceiver();
    // The receiver fails the callbacks of one request until told otherwise.
    receiver.reply = (callback) => (callback.body.localUid === failingLocalUid ? { status: 503, body: { status: 'Error' } } : SUCCESS);
    service = await startTestService({ CALLBACK_RETRY_SCHEDULE: '0,100ms' });
    clinic = await addClinic(service, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await service?.stop();
    await receiver?.close();
  });

  async function openConsole(): Promise<Page> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('request', (request) => {
      if (!request.url().startsWith(service.publicUrl) && !request.url().startsWith('data:')) blockedRequests.push(request.url());
    });
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) policyViolations.push(message.text());
    });
    const response = await page.goto(`${service.publicUrl}/console`);
    expect(response!.status()).toBe(200);
    expect(response!.headers()['content-security-policy']).toMatch(/script-src 'self';/);
    return page;
  }

  async function signIn(page: Page, token: string): Promise<void> {
    await page.getByLabel('businessId').fill(clinic.businessId);
    await page.getByLabel('user').fill(clinic.user);
    await page.getByLabel('token').fill(token);
    await page.getByRole('button', { name: 'Sign in' }).click();
  }

  it('signs in, shows a failed callback with its attempts, replays it and shows it delivered', async () => {
    const body = registerBody();
    failingLocalUid = body.localUid as string;
    const { body: ack } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), body);
    const queueMessageId = ack.queueMessageId as string;
    // Another clinic's request exists too: the console must not show it.
    const other = await addClinic(service, receiver.url);
    const { body: otherAck } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(other), registerBody());
    await until(
      'the acceptance callback failed',
      async () =>
        (await (await fetch(`${service.publicUrl}/api/messages/${queueMessageId}`, { headers: authHeaders(clinic) })).json()) as {
          callbacks: Array<{ state: string }>;
        },
      (state) => state.callbacks[0]?.state === 'failed',
    );

    const page = await openConsole();
    await signIn(page, 'wrong-token');
    await expect(page.getByRole('alert').textContent()).resolves.toBe('Unknown clinic account or wrong token.');
    await signIn(page, clinic.token);

    const request = page.locator(`details.request[data-queue-message-id="${queueMessageId}"]`);
    await request.waitFor({ timeout: 20_000 });
    expect(await page.locator(`details.request[data-queue-message-id="${otherAck.queueMessageId}"]`).count()).toBe(0);
    const failed = request.locator('.callback.state-failed');
    await expect(failed.locator('h4').textContent()).resolves.toContain('SendRegisterDocumentResponse');
    const attempts = await failed
      .locator('table.attempts tbody tr')
      .evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent)));
    expect(attempts).toHaveLength(2);
    for (const [number, , status, duration, error] of attempts) {
      expect(number).toMatch(/^[12]$/);
      expect(status).toBe('503');
      expect(duration).toMatch(/^\d+ ms$/);
      expect(error).toBe('HTTP 503');
    }
    // The credentials live in this tab's sessionStorage only.
    const storage = await page.evaluate(() => ({
      session: sessionStorage.getItem('ehr-gateway-console'),
      local: localStorage.length,
      cookies: document.cookie,
    }));
    expect(JSON.parse(storage.session!)).toEqual({ businessId: clinic.businessId, user: clinic.user, token: clinic.token });
    expect(storage).toMatchObject({ local: 0, cookies: '' });
    await screenshot(page, 'console-failed-callback');

    failingLocalUid = undefined;
    await failed.getByRole('button', { name: 'Replay' }).click();
    const acceptance = request.locator('.callback').first();
    await page.waitForFunction(
      (id) => document.querySelector(`details.request[data-queue-message-id="${id}"] .callback.state-delivered`) !== null,
      queueMessageId,
      { timeout: 30_000 },
    );
    await expect(acceptance.locator('.badge').textContent()).resolves.toBe('delivered');
    // The result callback, held until the acceptance was delivered, follows.
    await page.waitForFunction(
      (id) => document.querySelectorAll(`details.request[data-queue-message-id="${id}"] .callback.state-delivered`).length === 2,
      queueMessageId,
      { timeout: 30_000 },
    );
    const lastAttempt = await acceptance.locator('table.attempts tbody tr').last().locator('td').allTextContents();
    expect(lastAttempt[2]).toBe('200');
    await screenshot(page, 'console-replayed');

    // Nothing failed any more: the filter finds nothing; the same tab stays signed in across a reload.
    await page.getByLabel('filter').selectOption({ label: 'with a failed callback' });
    await page.getByText('No requests.').waitFor();
    await page.reload();
    await request.waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
    await page.close();

    // Another tab knows nothing of the credentials.
    const otherTab = await openConsole();
    await otherTab.getByRole('button', { name: 'Sign in' }).waitFor();
    await otherTab.close();
    expect(blockedRequests).toEqual([]);
    expect(policyViolations).toEqual([]);
  });
});
