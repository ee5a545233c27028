import { execFileSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { startLiveness, type Liveness } from '../../src/http/liveness.js';
import { outcomeOf } from '../support/cli.js';
import { spawnTsProgram, startServeProcess, type ServeProcess } from '../support/processes.js';
import { until } from '../support/until.js';

/**
 * GET `url` from another process every 50 ms, while this thread's event loop is held by the
 * synchronous wait for that process, until it answers `status` with a heartbeat at least
 * `minAgeMs` old (at most 60 s): the last answer seen.
 */
function probeWhileTheLoopIsHeld(url: string, status: number, minAgeMs: number): { status: number; body: { status: string; eventLoopHeartbeatAgeMs: number } } {
  const script = `
    const [url, status, minAgeMs] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3])];
    const started = Date.now();
    let last;
    for (;;) {
      const response = await fetch(url);
      last = { status: response.status, body: await response.json() };
      if ((last.status === status && last.body.eventLoopHeartbeatAgeMs >= minAgeMs) || Date.now() - started > 60_000) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    console.log(JSON.stringify(last));`;
  const output = execFileSync(process.execPath, ['--input-type=module', '-e', script, url, String(status), String(minAgeMs)], {
    encoding: 'utf8',
    timeout: 90_000,
  });
  return JSON.parse(output) as ReturnType<typeof probeWhileTheLoopIsHeld>;
}

describe('the liveness listener (HEALTH_PORT)', () => {
  const started: Liveness[] = [];
  afterAll(() => Promise.all(started.map((liveness) => liveness.stop())));
  const start = async (stallMs?: number) => {
    const liveness = await startLiveness('127.0.0.1', 0, stallMs);
    started.push(liveness);
    return `http://127.0.0.1:${liveness.port}`;
  };

  it('answers /healthz while the event loop is held, with the age of its heartbeat', async () => {
    const url = await start();
    // The internal listener, on this loop, could not answer at all meanwhile.
    const held = probeWhileTheLoopIsHeld(`${url}/healthz`, 200, 500);
    expect(held.status).toBe(200);
    expect(held.body.status).toBe('ok');
    expect(held.body.eventLoopHeartbeatAgeMs).toBeGreaterThanOrEqual(500);
    // Once the loop runs again, its heartbeat is fresh.
    await until(
      'a fresh heartbeat',
      async () => ((await (await fetch(`${url}/healthz`)).json()) as { eventLoopHeartbeatAgeMs: number }).eventLoopHeartbeatAgeMs,
      (age) => age < 500,
    );
  });

  it('answers 503 stalled once the heartbeat is older than the stall limit, and 200 again when the loop runs', async () => {
    const url = await start(1_000);
    const held = probeWhileTheLoopIsHeld(`${url}/healthz`, 503, 1_000);
    expect(held).toMatchObject({ status: 503, body: { status: 'stalled' } });
    const status = await until(
      '200 again',
      async () => (await fetch(`${url}/healthz`)).status,
      (code) => code === 200,
    );
    expect(status).toBe(200);
  });

  it('answers only GET and HEAD /healthz, in JSON with the security headers', async () => {
    const url = await start();
    const other = await fetch(`${url}/metrics`);
    expect(other.status).toBe(404);
    expect(other.headers.get('x-content-type-options')).toBe('nosniff');
    const post = await fetch(`${url}/healthz`, { method: 'POST' });
    expect(post.status).toBe(405);
    expect(post.headers.get('allow')).toBe('GET, HEAD');
    expect((await fetch(`${url}/healthz`, { method: 'HEAD' })).status).toBe(200);
  });
});

describe('serve with HEALTH_PORT', () => {
  let serve: ServeProcess;
  afterAll(() => serve?.stop());

  it('starts the liveness listener, names it in its start line, and the container probe asks it', async () => {
    serve = await startServeProcess({ HEALTH_PORT: '0' });
    const line = JSON.parse(
      serve
        .output()
        .split('\n')
        .find((candidate) => candidate.includes('"msg":"ehr-gateway started'))!,
    ) as {
      healthPort: number;
      healthUrl: string;
      msg: string;
    };
    expect(line.msg).toContain(`${line.healthUrl} (liveness: /healthz)`);
    const answer = await fetch(`${line.healthUrl}/healthz`);
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ status: 'ok' });
    const probe = await outcomeOf(spawnTsProgram('src/health-probe.ts', [], { HEALTH_PORT: String(line.healthPort), INTERNAL_PORT: '1' }), 60_000);
    expect(probe.code, probe.stderr).toBe(0);
  });
});
