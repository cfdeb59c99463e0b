/**
 * Saved dashboards over the analytics queries, and report exports produced by the `report-export`
 * workflow on the embedded Temporal dev server and downloaded as CSV (docs/api-notes.md
 * "Variables, escalation, onboarding, meta and settings"). Real HTTP, real Postgres, real Temporal SDK.
 */
import { expect } from 'chai';
import { QUICK_CLIENT, useTestApi } from '../helpers/api';
import { publishDraft } from './agents-fixtures';
import { createActivities } from '../../activities';
import { sandboxInventory } from '../../providers/telephony/sandbox';
import { until } from '../helpers/wait';
import { testTemporal } from '../helpers/temporal';

describe('dashboards and reports', function () {
  this.timeout(120_000);
  const t = useTestApi('dash_reports', QUICK_CLIENT, { worker: (deps) => createActivities(deps) });
  let org: { orgId: string; key: string; keyId: string };
  let other: { orgId: string; key: string; keyId: string };
  let agentId: string;
  let conversationId: string;

  before(async () => {
    org = await t.org('Dash');
    other = await t.org('Dash other');
    agentId = (await t.call('POST', '/agents', { key: org.key, json: { name: 'Numbers', voiceId: 'voice_ava', greeting: 'Hi' } })).body.data.id;
    expect((await publishDraft(t.db, org, agentId, 'dash-1')).kind).to.equal('published');
    conversationId = (await t.call('POST', '/chat/sessions', { key: org.key, json: { agentId } })).body.data.session.id;
  });

  describe('dashboards', () => {
    const widgets = () => [
      { title: 'Conversations', metric: 'conversations', rangeDays: 7 },
      { title: 'Desk messages', metric: 'messages', agentId, rangeDays: 1, timeZone: 'America/Chicago' },
    ];

    it('saves a dashboard and answers its figures from the analytics queries', async () => {
      const c = await t.call('POST', '/dashboards', { key: org.key, json: { name: 'Ops', widgets: widgets() } });
      expect(c.status).to.equal(201);
      expect(c.body.data.id).to.match(/^dsh_/);
      const data = await t.call('GET', `/dashboards/${c.body.data.id}/data`, { key: org.key });
      expect(data.status).to.equal(200);
      const [all, desk] = data.body.data.widgets;
      expect(all).to.include({ title: 'Conversations', metric: 'conversations', total: 1 });
      expect(all.series.reduce((n: number, s: { value: number }) => n + s.value, 0)).to.equal(1);
      expect(desk.metric).to.equal('messages');
      expect(Date.parse(desk.to) - Date.parse(desk.from)).to.equal(86_400_000);
      const renamed = await t.call('PATCH', `/dashboards/${c.body.data.id}`, { key: org.key, json: { name: 'Ops 2' } });
      expect(renamed.body.data).to.include({ name: 'Ops 2' });
      expect((await t.call('GET', '/dashboards', { key: org.key })).body.data.items).to.have.length(1);
      expect((await t.call('DELETE', `/dashboards/${c.body.data.id}`, { key: org.key })).status).to.equal(200);
      expect((await t.call('GET', `/dashboards/${c.body.data.id}`, { key: org.key })).status).to.equal(404);
    });

    it("refuses another organization's agent or a bad time zone naming the widget field, hides other organizations' dashboards, checks scopes", async () => {
      const theirAgent = (await t.call('POST', '/agents', { key: other.key, json: { name: 'Theirs' } })).body.data.id;
      const theirs = { title: 'a', metric: 'conversations', rangeDays: 1, agentId: theirAgent };
      const bad = await t.call('POST', '/dashboards', { key: org.key, json: { name: 'x', widgets: [theirs, { title: 'b', metric: 'costCents', rangeDays: 1, timeZone: 'No/Where' }] } });
      expect(bad.status).to.equal(400);
      expect(bad.body.errors.map((e: { field: string }) => e.field)).to.deep.equal(['widgets[1].timeZone']);
      const foreign = await t.call('POST', '/dashboards', { key: org.key, json: { name: 'x', widgets: [widgets()[0], theirs] } });
      expect(foreign.status).to.equal(404);
      expect(foreign.body.code).to.equal('agent_not_found');
      expect(foreign.body.errors[0].field).to.equal('widgets[1].agentId');
      expect((await t.call('POST', '/dashboards', { key: org.key, json: { name: 'x', widgets: [{ title: 'a', metric: 'vibes', rangeDays: 1 }] } })).status).to.equal(400);
      const mine = (await t.call('POST', '/dashboards', { key: org.key, json: { name: 'Mine', widgets: widgets() } })).body.data.id;
      expect((await t.call('GET', `/dashboards/${mine}`, { key: other.key })).status).to.equal(404);
      expect((await t.call('GET', `/dashboards/${mine}/data`, { key: other.key })).status).to.equal(404);
      const dashOnly = await t.org('Dash reader', ['dashboards:read']);
      expect((await t.call('GET', '/dashboards', { key: dashOnly.key })).status).to.equal(200);
      expect((await t.call('POST', '/dashboards', { key: dashOnly.key, json: { name: 'x', widgets: widgets() } })).status).to.equal(403);
      // The figures are analytics: analytics:read is needed too.
      const noAnalytics = await t.call('GET', `/dashboards/${mine}/data`, { key: dashOnly.key });
      expect(noAnalytics.status).to.equal(403);
      expect(noAnalytics.body.code).to.equal('insufficient_scope');
    });
  });

  describe('reports', () => {
    /** Waits for the report's workflow to close, so nothing of it is left for a worker that stops with the suite. */
    const closed = async (id: string) => {
      const { client } = await testTemporal();
      await client.workflow.getHandle(`report-export/${id}`).result().catch(() => undefined);
      expect((await client.workflow.getHandle(`report-export/${id}`).describe()).status.name).to.not.equal('RUNNING');
    };
    const waitReady = (id: string) =>
      until(async () => {
        const r = (await t.call('GET', `/reports/${id}`, { key: org.key })).body.data;
        return r.status === 'ready' || r.status === 'failed' ? r : undefined;
      }, 60_000, `report ${id} done`);

    const SOURCE = 'paper_form';
    it('exports conversations, usage and consent on demand through the workflow, downloadable as CSV', async () => {
      expect((await t.call('POST', '/numbers/purchase', { key: org.key, json: { e164: sandboxInventory('303')[4].e164 } })).status).to.equal(200);
      expect((await t.call('PUT', `/sms/contacts/${encodeURIComponent('+13035550199')}/consent`, { key: org.key, json: { source: SOURCE, proofText: '=HYPERLINK("x")' } })).status).to.equal(200);
      const expected: Record<string, string[]> = {
        conversations: ['id,agentId,channel,status,endReason,startedAt,endedAt,localStart,messages,tokens,costCents', conversationId],
        usage: ['id,kind,quantity,unitPriceCents,amountCents,resourceId,createdAt,localCreatedAt', 'phone_number_purchase'],
        consent: ['e164,event,source,occurredAt,recordedAt,proofText', '+13035550199', `"'=HYPERLINK(""x"")"`],
      };
      for (const kind of ['conversations', 'usage', 'consent']) {
        const c = await t.call('POST', '/reports', { key: org.key, json: { kind, timeZone: 'America/Denver' } });
        expect(c.status, c.text).to.equal(202);
        expect(c.body.data).to.include({ kind, status: 'queued', schedule: null, format: 'csv' });
        expect(c.body.data.id).to.match(/^rpt_/);
        const done = await waitReady(c.body.data.id);
        expect(done.status, JSON.stringify(done)).to.equal('ready');
        expect(done.files).to.have.length(1);
        const file = done.files[0];
        expect(file.rowCount, kind).to.equal(1);
        const dl = await t.call('GET', file.downloadUrl.replace('/api/v1', ''), { key: org.key });
        expect(dl.status).to.equal(200);
        expect(dl.headers.get('content-type')).to.match(/^text\/csv/);
        for (const s of expected[kind]) expect(dl.text, kind).to.include(s);
        expect((await t.call('GET', file.downloadUrl.replace('/api/v1', ''), { key: other.key })).status).to.equal(404);
        await closed(c.body.data.id);
      }
      expect((await t.call('GET', '/reports', { key: org.key })).body.data.items).to.have.length(3);
      expect((await t.call('GET', '/reports', { key: other.key })).body.data.items).to.have.length(0);
    });

    it('runs a scheduled report for the period that just ended, and cancels it', async () => {
      const c = await t.call('POST', '/reports', { key: org.key, json: { kind: 'usage', schedule: 'daily' } });
      expect(c.status).to.equal(202);
      const id = c.body.data.id;
      const first = await until(async () => {
        const r = (await t.call('GET', `/reports/${id}`, { key: org.key })).body.data;
        return r.files.length && r.status === 'scheduled' ? r : undefined;
      }, 60_000, 'first scheduled file');
      expect(first.status).to.equal('scheduled');
      const f = first.files[0];
      expect(Date.parse(f.periodTo) - Date.parse(f.periodFrom)).to.equal(86_400_000);
      expect(f.periodTo).to.match(/T00:00:00.000Z$/);
      const cancelled = await t.call('POST', `/reports/${id}/cancel`, { key: org.key });
      expect(cancelled.status).to.equal(200);
      expect(cancelled.body.data.status).to.equal('cancelled');
      expect((await t.call('POST', `/reports/${id}/cancel`, { key: org.key })).body.code).to.equal('report_finished');
      await closed(id);
      expect((await t.call('GET', `/reports/${id}`, { key: org.key })).body.data).to.include({ status: 'cancelled' });
      expect((await t.call('GET', `/reports/${id}`, { key: org.key })).body.data.files).to.have.length(1);
    });

    it('refuses bad ranges naming the field, and checks scopes', async () => {
      const cases: [Record<string, unknown>, string][] = [
        [{ kind: 'usage', from: '2026-02-01T00:00:00Z', to: '2026-01-01T00:00:00Z' }, 'to'],
        [{ kind: 'usage', from: '2024-01-01T00:00:00Z', to: '2026-01-01T00:00:00Z' }, 'from'],
        [{ kind: 'usage', schedule: 'daily', from: '2026-01-01T00:00:00Z' }, 'from'],
        [{ kind: 'usage', timeZone: 'Atlantis/Deep' }, 'timeZone'],
        [{ kind: 'transcripts' }, 'kind'],
      ];
      for (const [json, field] of cases) {
        const r = await t.call('POST', '/reports', { key: org.key, json });
        expect(r.status, JSON.stringify(json)).to.equal(400);
        expect(r.body.errors.map((e: { field: string }) => e.field), JSON.stringify(json)).to.include(field);
      }
      const reader = await t.org('Report reader', ['reports:read']);
      expect((await t.call('GET', '/reports', { key: reader.key })).status).to.equal(200);
      expect((await t.call('POST', '/reports', { key: reader.key, json: { kind: 'usage' } })).status).to.equal(403);
      expect((await t.call('GET', '/reports/rpt_missing0000000000', { key: org.key })).body.code).to.equal('report_not_found');
    });
  });
});
