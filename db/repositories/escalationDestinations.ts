/**
 * Escalation destinations and the presence of the teammates behind them (docs/api-notes.md
 * "Variables, escalation, onboarding, meta and settings"). Every function takes the organization id first.
 */
import type { Knex } from 'knex';
import type { Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import { iso } from '../timestamps';
import { orgTable } from './orgTable';
import { isOpen } from '../../domain/settings/hours';
import type { EscalationDestination, Presence, PresenceStatus } from '../../schemas/types/settings';

type Conn = Db | Knex.Transaction;

/** Row → API shape; `presence` is filled by {@link withPresence}. */
function toDestination(r: Record<string, any>): EscalationDestination {
  return {
    id: r.id,
    name: r.name,
    kind: r.kind,
    address: r.address,
    timeZone: r.time_zone,
    hours: r.hours ?? null,
    teammate: r.teammate ?? null,
    openNow: isOpen(r.time_zone, r.hours ?? null),
    presence: null,
    createdAt: iso(r.created_at)!,
    updatedAt: iso(r.updated_at)!,
  };
}

/** CRUD of `escalation_destinations` (db/repositories/orgTable.ts). */
export const destinations = orgTable('escalation_destinations', 'esc', toDestination);

/** Ids among `ids` that are escalation destinations of the organization. */
export async function existingDestinationIds(conn: Conn, orgId: string, ids: string[]): Promise<Set<string>> {
  if (!ids.length) return new Set();
  return new Set(await conn('escalation_destinations').where({ org_id: orgId }).whereIn('id', ids).pluck('id'));
}

function toPresence(r: Record<string, any>): Presence {
  const lapsed = r.until && new Date(r.until).getTime() <= Date.now();
  return { id: r.id, teammate: r.teammate, status: lapsed ? 'offline' : r.status, note: r.note ?? null, until: iso(r.until), updatedAt: iso(r.updated_at)! };
}

/** Fills each destination's `presence` from its teammate's (one query). */
export async function withPresence(conn: Conn, orgId: string, list: EscalationDestination[]): Promise<EscalationDestination[]> {
  const teammates = [...new Set(list.map((d) => d.teammate).filter((t): t is string => !!t))];
  if (!teammates.length) return list;
  const rows = await conn('teammate_presence').where({ org_id: orgId }).whereIn('teammate', teammates);
  const by = new Map(rows.map((r) => [r.teammate as string, toPresence(r).status]));
  return list.map((d) => ({ ...d, presence: d.teammate ? (by.get(d.teammate) ?? null) : null }));
}

/** Sets a teammate's presence (one row per teammate, e-mail lower-cased by the caller). */
export async function upsertPresence(db: Conn, orgId: string, teammate: string, p: { status: PresenceStatus; note: string | null; until: string | null }): Promise<Presence> {
  const [row] = await db('teammate_presence')
    .insert({ id: newId('prs'), org_id: orgId, teammate, status: p.status, note: p.note, until: p.until })
    .onConflict(['org_id', 'teammate'])
    .merge({ status: p.status, note: p.note, until: p.until, updated_at: db.fn.now() })
    .returning('*');
  return toPresence(row);
}

/** One page of presences, oldest first. @throws InvalidCursorError */
export function listPresence(db: Conn, orgId: string, page: { limit: number; cursor?: string }): Promise<Page<Presence>> {
  return keysetPage(db('teammate_presence').where({ org_id: orgId }).select('*'), { ...page, column: 'seq', direction: 'asc', map: toPresence });
}

/** What targets a destination: `agent <id> skill <name>` of drafts, `number <id>` of after-hours settings. */
export async function destinationUsers(conn: Conn, orgId: string, id: string): Promise<string[]> {
  const skills = await conn('agent_skills').where({ org_id: orgId, type: 'transfer_call' }).whereRaw("config->>'destinationId' = ?", [id]).select('agent_id', 'name');
  const numbers = await conn('number_settings').where({ org_id: orgId }).whereRaw("settings#>>'{businessHours,escalationDestinationId}' = ?", [id]).pluck('number_id');
  return [...skills.map((s) => `agent ${s.agent_id} skill ${s.name}`), ...numbers.map((n: string) => `number ${n}`)];
}
