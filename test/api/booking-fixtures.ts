/**
 * Shared fixtures of the skill-output-variable tests and the channel walk (docs/api-notes.md "Agents": playbook
 * graphs): a loopback booking endpoint, the playbook `reserve` that says the booking's output variables (one line
 * with a blank placeholder, which is not said), and a published agent holding both.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { chain, publishDraft } from './agents-fixtures';
import type { TestApi } from '../helpers/api';
import { createSkillHttpClient, type SkillHttpClient } from '../../providers/http/request';
import { ALLOW_PRIVATE_ENV } from '../../providers/http';
import { parseAllowList } from '../../domain/net/guard';

/** What the booking endpoint answers every request: a confirmed booking whose `note` is blank. */
export const BOOKING = { bookingId: 'BK-7', status: 'confirmed', note: '  ' } as const;

/** A loopback endpoint answering every request with {@link BOOKING}; `requests` counts what it was asked. */
export function bookingEndpoint(): Promise<{ url: string; requests: number; close: () => void }> {
  return new Promise((resolve) => {
    const out = { url: '', requests: 0, close: () => server.close() };
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        out.requests++;
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify(BOOKING));
      });
    });
    server.listen(0, '127.0.0.1', () => {
      out.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/book`;
      resolve(out);
    });
  });
}

/**
 * The loopback endpoint for the enclosing mocha `describe` with `HTTP_ALLOW_PRIVATE_HOSTS=127.0.0.1` (restored
 * after) and the API's skill HTTP client allowed to reach it (`providers.skillHttp` of `startTestApi`).
 */
export function useBookingEndpoint(): { endpoint: () => { url: string; requests: number }; skillHttp: () => SkillHttpClient } {
  let endpoint: Awaited<ReturnType<typeof bookingEndpoint>> | undefined;
  let skillHttp: SkillHttpClient | undefined;
  const saved = process.env[ALLOW_PRIVATE_ENV];
  before(async () => {
    process.env[ALLOW_PRIVATE_ENV] = '127.0.0.1';
    endpoint = await bookingEndpoint();
    skillHttp = createSkillHttpClient({ allow: parseAllowList('127.0.0.1') });
  });
  after(async () => {
    if (saved === undefined) delete process.env[ALLOW_PRIVATE_ENV];
    else process.env[ALLOW_PRIVATE_ENV] = saved;
    endpoint?.close();
    await skillHttp?.close();
  });
  const started = <T>(v: T | undefined): T => {
    if (v === undefined) throw new Error('useBookingEndpoint used before its before() hook ran');
    return v;
  };
  return { endpoint: () => started(endpoint), skillHttp: () => started(skillHttp) };
}

/** The playbook `reserve`: run `book_appointment`, say its booking id, say its note (blank: not said), end. */
export const RESERVE_GRAPH = {
  nodes: [
    { id: 'start', type: 'start' },
    { id: 'book', type: 'skill', skill: 'book_appointment' },
    { id: 'confirm', type: 'say', prompt: 'You are booked: your reference is {{book_appointment_bookingId}} ({{ book_appointment_status }}).' },
    { id: 'note', type: 'say', prompt: 'Please note: {{book_appointment_note}}.' },
    { id: 'end', type: 'end' },
  ],
  edges: chain('start', 'book', 'confirm', 'note', 'end'),
};

/** What the person hears or reads once `reserve` ran: the confirmation line alone (the note's line is skipped). */
export const CONFIRMATION = 'You are booked: your reference is BK-7 (confirmed).';

/**
 * Creates and publishes an agent (`agent` are extra fields of `POST /agents`) with the `http_request` skill
 * `book_appointment` calling `endpointUrl`, the playbook `reserve` (`playbook` are extra fields of its create, e.g.
 * `triggerPhrases`) and any `skills` (bodies of `POST /agents/{id}/skills`). @returns the agent's id
 */
export async function createBookingAgent(
  t: Pick<TestApi, 'call' | 'db'>,
  org: { orgId: string; key: string; keyId: string },
  endpointUrl: string,
  opts: { agent?: Record<string, unknown>; playbook?: Record<string, unknown>; skills?: Record<string, unknown>[]; idempotencyKey?: string } = {},
): Promise<string> {
  const agent = await t.call('POST', '/agents', { key: org.key, json: { name: 'Desk', voiceId: 'voice_ava', ...opts.agent } });
  expect(agent.status, agent.text).to.equal(201);
  const agentId = agent.body.data.id as string;
  for (const json of [{ name: 'book_appointment', type: 'http_request', config: { url: endpointUrl, method: 'POST' } }, ...(opts.skills ?? [])]) {
    const skill = await t.call('POST', `/agents/${agentId}/skills`, { key: org.key, json });
    expect(skill.status, skill.text).to.equal(201);
  }
  const pb = await t.call('POST', `/agents/${agentId}/playbooks`, { key: org.key, json: { name: 'reserve', description: 'Books a table', graph: RESERVE_GRAPH, ...opts.playbook } });
  expect(pb.status, pb.text).to.equal(201);
  expect((await publishDraft(t.db, org, agentId, opts.idempotencyKey ?? `${agentId}-1`)).kind).to.equal('published');
  return agentId;
}
