/**
 * Phone settings of owned numbers (scopes phone:read/write; README "Variables, escalation, onboarding,
 * meta and settings"): one JSON row per number, absent until the first PUT (the defaults apply).
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
