/**
 * OAuth benchmark (docs/benchmarks.md, docs/team-and-oauth.md "Connect an app with OAuth"). One process: an embedded Postgres
 * (`durable: false`) and one API. Prints:
 *  1. `GET /agents` with an OAuth access token `<brand>_oat_…` and with a secret key, 50 connections for
 *     BENCH_OAUTH_SECONDS each (default 5; autocannon in this process, so absolute figures are low; the two
 *     are comparable because both go through the same authentication path and key cache);
 *  2. refresh-token grants (rotation: one token row and one refresh row written, one marked used) at
 *     concurrency 10, per second, over `POST /oauth/token`;
 *  3. argon2id hash and verify of one password (the cost of a sign-in), p50 of 20.
 * Setup (organization, client, grant, tokens) is not timed.
 *
 * Run: `BENCH_ONLY=oauth npm run bench` or `npx tsx bench/oauth.ts`.
 */
import autocannon from 'autocannon';
import { openBenchDatabase } from './harness';
import { runBench } from './entry';
import { loadConfig } from '../config';
import { createLogger } from '../runtime';
import { startApi } from '../api/server';
import { createOrganization } from '../db/repositories/organizations';
import { createSecretKey } from '../db/repositories/apiKeys';
import { createClient, createGrant, saveTokens } from '../db/repositories/oauth';
import { createMember } from '../db/repositories/team';
import { randomBase62 } from '../db/ids';
import { hashPassword, verifyPassword } from '../services/team/passwords';

const SECONDS = Number(process.env.BENCH_OAUTH_SECONDS ?? 5);
const REFRESHES = 400;

/** Runs the OAuth section and prints its figures. */
export async function runOAuthBench(): Promise<void> {
  const database = await openBenchDatabase('oauth', { poolMax: 20 });
  const config = loadConfig({ port: 0, host: '127.0.0.1', logLevel: 'silent', rateLimitPoints: 1_000_000_000 });
  const api = await startApi({ db: database.db, databaseUrl: database.databaseUrl, config, logger: createLogger('silent') });
  try {
    const { db } = database;
    const org = await createOrganization(db, 'OAuth bench');
    const { key } = await createSecretKey(db, org.id, { brand: 'acp', scopes: ['agents:read', 'keys:write'] });
    const member = await createMember(db, org.id, { email: 'bench@oauth.example', role: 'developer', passwordHash: null });
    const { client, secret } = await createClient(db, org.id, { brand: 'acp', name: 'bench', confidential: true, redirectUris: ['https://app.example/cb'], scopes: ['agents:read'] });
    const grant = await createGrant(db, org.id, { clientId: client.id, memberId: member.id, scopes: ['agents:read'] });
    const issue = async () => {
      const accessToken = `acp_oat_${randomBase62(24)}`;
      const refreshToken = `acp_ort_${randomBase62(32)}`;
      const day = new Date(Date.now() + 86_400_000);
      await saveTokens(db, org.id, { grantId: grant.id, name: 'bench', brand: 'acp', accessToken, accessTokenExpiresAt: day, refreshToken, refreshTokenExpiresAt: day, scopes: ['agents:read'] });
      return { accessToken, refreshToken };
    };
    const { accessToken } = await issue();

    for (const [label, bearer] of [['an OAuth token', accessToken], ['a secret key', key]] as const) {
      const r = await autocannon({ url: `${api.baseUrl}/agents`, connections: 50, duration: SECONDS, headers: { authorization: `Bearer ${bearer}` } });
      console.log(`GET /agents with ${label}: ${Math.round(r.requests.average)} req/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms, non-2xx ${r.non2xx}`);
    }

    const refreshTokens = await Promise.all(Array.from({ length: REFRESHES }, () => issue().then((t) => t.refreshToken)));
    const basic = `Basic ${Buffer.from(`${client.id}:${secret}`).toString('base64')}`;
    const origin = new URL(api.baseUrl).origin;
    let next = 0;
    let failed = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next < refreshTokens.length) {
          const token = refreshTokens[next++];
          const res = await fetch(`${origin}/oauth/token`, { method: 'POST', headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' }, body: `grant_type=refresh_token&refresh_token=${token}` });
          if (res.status !== 200) failed++;
          await res.arrayBuffer();
        }
      }),
    );
    const s = (performance.now() - t0) / 1000;
    console.log(`refresh-token grants at concurrency 10: ${Math.round(REFRESHES / s)}/s (${REFRESHES} in ${s.toFixed(2)} s, ${failed} failed)`);

    const hashMs: number[] = [];
    const verifyMs: number[] = [];
    for (let i = 0; i < 20; i++) {
      const a = performance.now();
      const h = await hashPassword('a long enough password');
      const b = performance.now();
      await verifyPassword(h, 'a long enough password');
      hashMs.push(b - a);
      verifyMs.push(performance.now() - b);
    }
    const p50 = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)].toFixed(1);
    console.log(`argon2id (19 MiB, t=2, p=1): hash p50 ${p50(hashMs)} ms, verify p50 ${p50(verifyMs)} ms`);
  } finally {
    await api.close();
    await database.close();
  }
}

if (require.main === module) runBench('bench/oauth.ts', runOAuthBench);
