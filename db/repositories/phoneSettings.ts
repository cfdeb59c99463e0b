/**
 * Phone settings of owned numbers (scopes phone:read/write; docs/api-notes.md
 * "Variables, escalation, onboarding, meta and settings"): one JSON row per number, absent until the first PUT (the defaults apply).
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { iso } from '../timestamps';
import type { PhoneSettings } from '../../schemas/types/settings';

type Conn = Db | Knex.Transaction;

/** Stored settings of a number of the organization, or undefined (never saved). */
export async function getPhoneSettings(db: Conn, orgId: string, numberId: string): Promise<{ settings: PhoneSettings; revision: number; updatedAt: string } | undefined> {
  const r = await db('number_settings').where({ org_id: orgId, number_id: numberId }).first();
  return r ? { settings: r.settings, revision: r.revision, updatedAt: iso(r.updated_at)! } : undefined;
}

/** Replaces the settings of a number (the caller checked the number is the organization's). */
export async function putPhoneSettings(db: Conn, orgId: string, numberId: string, settings: PhoneSettings): Promise<{ revision: number; updatedAt: string }> {
  const json = JSON.stringify(settings);
  const [r] = await db('number_settings')
    .insert({ number_id: numberId, org_id: orgId, settings: json })
    .onConflict('number_id')
    .merge({ settings: json, revision: db.raw('number_settings.revision + 1'), updated_at: db.fn.now() })
    .returning(['revision', 'updated_at']);
  return { revision: r.revision, updatedAt: iso(r.updated_at)! };
}

/**
 * The organization's purchased numbers assigned to `agentId`, oldest first, with their stored settings (null: never
 * saved; the defaults apply): what the pre-publish report lists per number (domain/agents/reachReport.ts).
 */
export async function agentNumberSettings(db: Conn, orgId: string, agentId: string): Promise<{ id: string; e164: string; smsEnabled: boolean; settings: PhoneSettings | null }[]> {
  const rows = await db('phone_numbers as n')
    .leftJoin('number_settings as s', 's.number_id', 'n.id')
    .where({ 'n.org_id': orgId, 'n.agent_id': agentId, 'n.status': 'purchased' })
    .orderBy('n.seq')
    .select('n.id', 'n.e164', 'n.sms_enabled', 's.settings');
  return rows.map((r: any) => ({ id: r.id, e164: r.e164, smsEnabled: !!r.sms_enabled, settings: r.settings ?? null }));
}
