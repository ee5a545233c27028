import { FLOWS } from './flows.js';
import { inLanguage, type Language } from './language.js';

export const GETTING_STARTED_STYLE = `main.guide{max-width:1100px;padding:8px 24px 48px;line-height:1.5} main.guide h2{margin-top:40px;border-bottom:1px solid #d0d7de;padding-bottom:4px}
main.guide figure{margin:16px 0;border:1px solid #d0d7de;border-radius:6px;padding:8px;background:#fff} main.guide figure svg{display:block;max-width:100%;height:auto} main.guide figcaption{color:#57606a;font-size:14px;margin-top:6px}
main.guide code{background:#f6f8fa;padding:1px 4px;border-radius:4px} main.guide pre{background:#f6f8fa;padding:12px;border-radius:6px;overflow-x:auto}`;

export const GETTING_STARTED_TITLE: Record<Language, string> = { en: 'ehr-gateway: getting started', ru: 'ehr-gateway: начало работы' };

/**
 * The getting-started page (/docs) in `language`; `diagram(id)` is a flow's SVG in that language.
 * The specs stay English: they are the contract, and their texts go to generated clients.
 */
export function gettingStarted(language: Language, diagram: (id: string) => string): string {
  const [interfaceA, interfaceB] = FLOWS;
  const link = (path: string) => inLanguage(path, language);
  const figure = (flow: (typeof FLOWS)[number]) => `<figure>${diagram(flow.id)}<figcaption>${flow.title[language]}</figcaption></figure>`;
  if (language === 'ru') {
    return `<main class="guide">
<h1>ehr-gateway: начало работы</h1>
<p>Один сервис, два интерфейса. <strong>Интерфейс A</strong>, сервер ЭМК, отдаёт данные пациента по JSON-RPC 2.0 приложениям, пользователей которых входит в систему ваш собственный сервер авторизации.
<strong>Интерфейс B</strong>, шлюз реестра ЭМД, регистрирует электронные медицинские документы клиники в федеральном реестре и доставляет файлы документов по HTTP/JSON: отвечает на каждый запрос сразу, а затем дважды вызывает клинику обратно.
Оба описаны своими спецификациями, которые и есть договор: <a href="/docs/openrpc.json">openrpc.json</a> и <a href="/docs/openapi.yaml">openapi.yaml</a> (на английском: их тексты попадают в генерируемые клиенты).</p>

<h2 id="interface-a">Интерфейс A: сервер ЭМК</h2>
<p>Сервер авторизации сохраняет токены обмена и сессии на сервере ЭМК по внутреннему каналу, с учётными данными SHA-1; приложение отправляет идентифицирующие данные пользователя только на сервер ЭМК.
Справочник: <a href="${link('/docs/openrpc')}">методы, параметры, результаты, примеры и коды ошибок</a>.</p>
${figure(interfaceA)}

<h2 id="interface-b">Интерфейс B: шлюз реестра ЭМД</h2>
<p>Каждый запрос подтверждается сразу, а отвечают на него два обратных вызова (callback) на адрес клиники: сначала о приёме, затем с результатом. Каждый повторяется, пока клиника не ответит <code>200 {"status":"Success"}</code>, а вызов, не доставленный совсем, можно отправить заново (Replay).
Справочник: <a href="${link('/docs/openapi')}">операции, обратные вызовы и схемы</a>.</p>
${figure(interfaceB)}

<h2 id="try-it">Попробовать</h2>
<ol>
<li><code>make run</code> запускает сервис с демо-данными; пошаговые инструкции README (по-русски: <code>README.ru.md</code>) ведут оба интерфейса оттуда до первого доставленного обратного вызова, команда за командой (тест выполняет ровно эти команды).</li>
<li><code>node dist/src/main.js document sample --out sample</code> пишет документ, подписанный свежими тестовыми ключами ГОСТ, и тело RegisterDocument, которое отправляет его от имени демо-клиники.</li>
<li><code>make mock</code> запускает заглушки обоих интерфейсов по спецификациям; заглушка интерфейса B подписывает свои обратные вызовы, как сервис.</li>
<li><a href="${link('/console')}">Консоль доставки</a> показывает клинике её запросы и каждую попытку обратного вызова и повторяет неудавшийся вызов.</li>
</ol>
</main>`;
  }
  return `<main class="guide">
<h1>ehr-gateway: getting started</h1>
<p>One service, two interfaces. <strong>Interface A</strong>, the EHR server, serves patient data over JSON-RPC 2.0 to apps whose users an authorization server of your own logs in.
<strong>Interface B</strong>, the ЭМД registry gateway, registers a clinic's electronic medical documents in the national registry and delivers document files, over HTTP/JSON, answering each request at once and calling the clinic back twice.
Both are described by their specs, the source of truth: <a href="/docs/openrpc.json">openrpc.json</a> and <a href="/docs/openapi.yaml">openapi.yaml</a>.</p>

<h2 id="interface-a">Interface A: the EHR server</h2>
<p>The authorization server stores exchange tokens and sessions on the EHR server over an internal channel, with SHA-1 credentials; the app sends the user's identifying data to the EHR server only.
Reference: <a href="${link('/docs/openrpc')}">methods, params, results, examples and the error codes</a>.</p>
${figure(interfaceA)}

<h2 id="interface-b">Interface B: the ЭМД registry gateway</h2>
<p>Every request is acknowledged at once and answered by two callbacks to the clinic's callback URL, acceptance first, then the result; each is retried until the clinic answers <code>200 {"status":"Success"}</code>, and a callback that failed for good can be replayed.
Reference: <a href="${link('/docs/openapi')}">operations, callbacks and schemas</a>.</p>
${figure(interfaceB)}

<h2 id="try-it">Try it</h2>
<ol>
<li><code>make run</code> starts the service with demo data; the README's walk-throughs take both interfaces from there to a first delivered callback, command by command (a test runs exactly those commands).</li>
<li><code>node dist/src/main.js document sample --out sample</code> writes a document signed with fresh GOST test keys and the RegisterDocument body that sends it for the demo clinic.</li>
<li><code>make mock</code> starts mocks of both interfaces from the specs; the mock of interface B signs its callbacks like the service.</li>
<li>The <a href="${link('/console')}">delivery console</a> shows a clinic its requests and every callback attempt, and replays a failed callback.</li>
</ol>
</main>`;
}
