import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RPC_ERROR_MEANINGS_RU } from '../../src/docs/error-codes-ru.js';
import { registryCodeMeaningRu } from '../../src/docs/routes.js';
import { pageLanguage } from '../../src/docs/language.js';
import type { CreatedClinicAccount } from '../../src/emdr/accounts/clients.js';
import { ERROR_CODES } from '../../src/emdr/errors/codes.js';
import { launchChromium, screenshot } from '../support/browser.js';
import { startCallbackReceiver, type CallbackReceiver } from '../support/callback-receiver.js';
import { repoRoot } from '../support/cli.js';
import { addClinic, authHeaders, post, registerBody } from '../support/emdr.js';
import { startTestService, type TestService } from '../support/service.js';
import { until } from '../support/until.js';

const run = promisify(execFile);

type Language = 'en' | 'ru';

/** What each page says in each language: its <h1> (or first heading), and a phrase of its navigation. */
const EXPECTED: Record<Language, { navigation: string; gettingStarted: string; console: string; errorCodes: string; signIn: string }> = {
  en: {
    navigation: 'Getting started',
    gettingStarted: 'ehr-gateway: getting started',
    console: 'Delivery console',
    errorCodes: 'Error codes',
    signIn: 'Sign in',
  },
  ru: { navigation: 'Начало работы', gettingStarted: 'ehr-gateway: начало работы', console: 'Консоль доставки', errorCodes: 'Коды ошибок', signIn: 'Войти' },
};

/**
 * Every page of the service (/docs, /docs/openrpc, /docs/openapi, /console signed out and signed in)
 * in Russian and in English, in real Chromium: the browser's Accept-Language picks the language, the
 * switch on every page changes it, the error tables carry both, and a screenshot of each page in
 * each language goes to test-results/pages/.
 */
describe('the web pages in Russian and English', () => {
  let service: TestService;
  let receiver: CallbackReceiver;
  let browser: Browser;
  let clinic: CreatedClinicAccount;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    await run(process.execPath, ['--import', 'tsx', 'scripts/build-docs.ts'], { cwd: repoRoot });
    receiver = await startCallbackReceiver();
    // One request whose callbacks fail for good, one delivered: the console shows both.
    receiver.reply = () => ({ status: 503, body: { status: 'Error' } });
    service = await startTestService({ CALLBACK_RETRY_SCHEDULE: '0,100ms' });
    clinic = await addClinic(service, receiver.url);
    receiver.signingSecret = clinic.signingSecret;
    const { body: ack } = await post(service.publicUrl, '/api/RegisterDocument', authHeaders(clinic), registerBody());
    await until(
      'the acceptance callback failed',
      async () =>
        (await (await fetch(`${service.publicUrl}/api/messages/${ack.queueMessageId}`, { headers: authHeaders(clinic) })).json()) as {
          callbacks: Array<{ state: string }>;
        },
      (state) => state.callbacks[0]?.state === 'failed',
    );
    browser = await launchChromium();
  });

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await service?.stop();
    await receiver?.close();
  });

  /** A browser whose Accept-Language prefers `language` (Chromium sends its locale). */
  async function browserIn(language: Language): Promise<BrowserContext> {
    const context = await browser.newContext({ locale: language === 'ru' ? 'ru-RU' : 'en-US', viewport: { width: 1280, height: 900 } });
    contexts.push(context);
    return context;
  }

  async function open(context: BrowserContext, route: string, language: Language): Promise<Page> {
    const page = await context.newPage();
    const response = await page.goto(`${service.publicUrl}${route}`);
    expect(response!.status(), route).toBe(200);
    expect(response!.headers()['content-language'], route).toBe(language);
    expect(response!.headers().vary, route).toMatch(/Accept-Language/i);
    expect(await page.locator('html').getAttribute('lang'), route).toBe(language);
    expect(await page.locator('nav.site').innerText(), route).toContain(EXPECTED[language].navigation);
    // The icon the page names is there (no 404 for a favicon).
    const icon = await page.locator('link[rel=icon]').getAttribute('href');
    const iconAnswer = await fetch(`${service.publicUrl}${icon}`);
    expect(iconAnswer.status).toBe(200);
    expect(iconAnswer.headers.get('content-type')).toMatch(/^image\/svg\+xml/);
    return page;
  }

  for (const language of ['en', 'ru'] as const) {
    it(`shows every page in ${language === 'ru' ? 'Russian' : 'English'} to a browser that prefers it, and takes a screenshot of each`, async () => {
      const context = await browserIn(language);
      const other = language === 'ru' ? 'en' : 'ru';

      const guide = await open(context, '/docs/', language);
      expect(await guide.locator('main h1').innerText()).toBe(EXPECTED[language].gettingStarted);
      // The diagrams are drawn in the page's language too.
      const labels = await guide.locator('svg.sequence-diagram text').allTextContents();
      expect(labels).toContain(language === 'ru' ? 'Сервер авторизации' : 'Authorization server');
      expect(labels).toContain(language === 'ru' ? 'Реестр ЭМД' : 'ЭМД registry');
      // The page's own links keep the language.
      expect(await guide.locator('main a[href^="/docs/openrpc?"]').getAttribute('href')).toBe(`/docs/openrpc?lang=${language}`);
      await screenshot(guide, `pages/getting-started.${language}`);

      const rpcDocument = JSON.parse(await fs.readFile(path.join(repoRoot, 'specs/openrpc.json'), 'utf8')) as {
        info: { title: string };
        'x-error-codes': Array<{ code: number; meaning: string }>;
      };
      const rpc = await open(context, '/docs/openrpc', language);
      await rpc.locator('#error-codes tbody tr').first().waitFor({ timeout: 20_000 });
      expect(await rpc.locator('#error-codes h2').innerText()).toBe(EXPECTED[language].errorCodes);
      const rpcHeaders = await rpc.locator('#error-codes thead th').allTextContents();
      expect(rpcHeaders.slice(2)).toEqual(language === 'ru' ? ['когда (по-русски)', 'when (English)'] : ['when (English)', 'когда (по-русски)']);
      const rpcRows = await rpc
        .locator('#error-codes tbody tr')
        .evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent ?? '')));
      const russianColumn = language === 'ru' ? 2 : 3;
      for (const [index, entry] of rpcDocument['x-error-codes'].entries()) {
        expect(rpcRows[index]![0]).toBe(String(entry.code));
        expect(rpcRows[index]![russianColumn], `Russian meaning of ${entry.code}`).toBe(RPC_ERROR_MEANINGS_RU[String(entry.code)]!.replaceAll('`', ''));
        expect(rpcRows[index]![5 - russianColumn]).toBe(entry.meaning.replaceAll('`', ''));
      }
      await screenshot(rpc, `pages/interface-a.${language}`);

      const rest = await open(context, '/docs/openapi', language);
      await rest.locator('[data-section-id="operation/RegisterDocument"]').waitFor({ timeout: 20_000 });
      await rest.locator('#error-codes summary').click();
      expect(await rest.locator('#error-codes h2').innerText()).toBe(EXPECTED[language].errorCodes);
      const restRows = await rest
        .locator('#error-codes tbody tr')
        .evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('td')].map((cell) => cell.textContent ?? '')));
      expect(restRows.map((row) => row[0])).toEqual(Object.keys(ERROR_CODES));
      for (const row of restRows) {
        const code = row[0] as keyof typeof ERROR_CODES;
        expect(row[russianColumn]).toBe(registryCodeMeaningRu(code));
        expect(row[5 - russianColumn]).toBe(ERROR_CODES[code].meaning);
      }
      // Redoc's badge no longer floats over the table (it was pinned to the window's bottom-left).
      const badge = rest.locator('#redoc a[href*="redocly.com"]').first();
      await badge.waitFor({ state: 'attached' });
      expect(await badge.evaluate((anchor) => getComputedStyle(anchor.parentElement!).position)).toBe('static');
      await rest.locator('#error-codes').screenshot({ path: path.join(repoRoot, 'test-results', 'pages', `interface-b-error-codes.${language}.png`) });
      await screenshot(rest, `pages/interface-b.${language}`);

      const console = await open(context, '/console', language);
      await console.getByRole('button', { name: EXPECTED[language].signIn }).waitFor();
      expect(await console.locator('main h1').innerText()).toBe(EXPECTED[language].console);
      await screenshot(console, `pages/console-sign-in.${language}`);
      await console.getByLabel('businessId').fill(clinic.businessId);
      await console.getByLabel('user').fill(clinic.user);
      await console.getByLabel('token').fill(clinic.token);
      await console.getByRole('button', { name: EXPECTED[language].signIn }).click();
      const failed = console.locator('.callback.state-failed').first();
      await failed.waitFor({ timeout: 20_000 });
      expect(await failed.getByRole('button').innerText()).toBe(language === 'ru' ? 'Повторить' : 'Replay');
      expect(await console.locator('table.attempts th').first().textContent()).toBe(language === 'ru' ? '№' : '#');
      await screenshot(console, `pages/console-requests.${language}`);

      // The switch: the same page in the other language, whatever the browser prefers.
      await console.getByRole('link', { name: other === 'ru' ? 'Русский' : 'English' }).click();
      await console.waitForURL(`**/console?lang=${other}`);
      expect(await console.locator('html').getAttribute('lang')).toBe(other);
      await console.locator('header h1').waitFor();
      expect(await console.locator('header h1').innerText()).toBe(EXPECTED[other].console);
      expect(await console.locator('nav.site a', { hasText: EXPECTED[other].navigation }).getAttribute('href')).toBe(`/docs/?lang=${other}`);
    });
  }

  it("reads the browser's preference from Accept-Language, and ?lang= over it", () => {
    expect(pageLanguage(undefined, 'ru-RU,ru;q=0.9,en-US;q=0.8,en;q=0.7')).toBe('ru');
    expect(pageLanguage(undefined, 'en-GB,en;q=0.9,ru;q=0.8')).toBe('en');
    expect(pageLanguage(undefined, 'de-DE,de;q=0.9,ru;q=0.5,en;q=0.4')).toBe('ru');
    expect(pageLanguage(undefined, 'ru;q=0, en;q=0.1')).toBe('en');
    expect(pageLanguage(undefined, 'fr')).toBe('en');
    expect(pageLanguage(undefined, undefined)).toBe('en');
    expect(pageLanguage('en', 'ru')).toBe('en');
    expect(pageLanguage('ru', 'en')).toBe('ru');
    expect(pageLanguage('xx', 'ru')).toBe('ru');
    expect(pageLanguage(['ru', 'en'], 'en')).toBe('en');
  });

  it('answers /favicon.ico and /favicon.svg with the icon, not a 404', async () => {
    for (const route of ['/favicon.ico', '/favicon.svg']) {
      const answer = await fetch(`${service.publicUrl}${route}`);
      expect(answer.status, route).toBe(200);
      expect(await answer.text()).toMatch(/^<svg /);
    }
  });
});
