/**
 * Settings benchmark (docs/benchmarks.md; docs/api-notes.md "Variables, escalation, onboarding, meta and settings"):
 * one on-demand conversations report of 100,000 conversations written by the export activity (the work of
 * `report-export/{id}`), and `GET /onboarding` and `GET /meta` p50/p99 through HTTP over that organization.
 * Rows are generated in SQL.
 *
 * Run: `BENCH_ONLY=settings npm run bench` or `npx tsx bench/settings.ts`. BENCH_SETTINGS_CONVERSATIONS
 * (100,000) and BENCH_SETTINGS_RUNS (50) set the size.
 */
import os from 'node:os';
import { createReport } from '../db/repositories/reports';
import { createReportActivities } from '../activities/reports';
import { runBench } from './entry';
import { openBenchOrganization, percentile } from './harness';

const CONVERSATIONS = Number(process.env.BENCH_SETTINGS_CONVERSATIONS ?? 100_000);
const RUNS = Number(process.env.BENCH_SETTINGS_RUNS ?? 50);


/** Runs the settings section and prints its figures. */
export async function runSettingsBench(): Promise<void> {
  const { db, orgId, timedGet: get, close } = await openBenchOrganization('settings', 'Settings bench', { poolMax: 10 });
  try {
    await db('agents').insert({ id: 'agt_benchsettings1', org_id: orgId, name: 'Bench agent' });
    await db.raw(
      `INSERT INTO conversations (id, org_id, agent_id, channel, mode, version_id, status, end_reason, message_count, prompt_tokens, completion_tokens, cost_cents, started_at, ended_at)
       SELECT 'cnv_bset' || lpad(g::text, 9, '0'), ?, 'agt_benchsettings1', 'chat', 'published', 'ver_bench', 'ended', 'ended_by_user', 10, 400, 120, 5,
              now() - (g::float / ? * interval '30 days'), now() - (g::float / ? * interval '30 days') + interval '3 minutes'
         FROM generate_series(1, ?) g`,
      [orgId, CONVERSATIONS, CONVERSATIONS, CONVERSATIONS],
    );
    await db.raw('VACUUM ANALYZE conversations');
    const to = new Date().toISOString();
    const from = new Date(Date.now() - 31 * 86_400_000).toISOString();
    const report = await createReport(db, orgId, { kind: 'conversations', schedule: null, timeZone: 'America/Chicago', from, to });
    const t0 = performance.now();
    const out = await createReportActivities({ db }).exportReportPeriod({ orgId, reportId: report.id, period: { from, to }, final: true });
    const exportMs = performance.now() - t0;
    const size = (await db('report_files').where({ report_id: report.id }).first('byte_size')).byte_size as number;

    const onboarding: number[] = [];
    const meta: number[] = [];
    await get('/onboarding');
    for (let i = 0; i < RUNS; i++) {
      onboarding.push(await get('/onboarding'));
      meta.push(await get('/meta'));
    }
    console.log(`settings: ${CONVERSATIONS.toLocaleString('en-US')} conversations of one organization, ${os.cpus().length} cores`);
    console.log(`  conversations report (export activity)   ${out.rowCount.toLocaleString('en-US')} rows, ${(size / 1e6).toFixed(1)} MB CSV in ${(exportMs / 1000).toFixed(2)} s`);
    console.log(`  GET /onboarding                          p50 ${percentile(onboarding, 50).toFixed(1)} ms   p99 ${percentile(onboarding, 99).toFixed(1)} ms`);
    console.log(`  GET /meta                                p50 ${percentile(meta, 50).toFixed(1)} ms   p99 ${percentile(meta, 99).toFixed(1)} ms`);
  } finally {
    await close();
  }
}

if (require.main === module) runBench('bench settings', runSettingsBench);
