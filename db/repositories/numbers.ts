/**
 * Phone numbers reserved or owned by organizations (spec "Numbers"). A number has one holder across
 * organizations (unique e164); a reservation lapses after RESERVATION_MINUTES and may then be taken by
 * anyone. Ordered by `seq` for cursor pagination.
 */
import type { Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import type { PhoneNumber } from '../../schemas/types/numbers';
import { iso } from '../timestamps';
import type { Knex } from 'knex';
import { numberReleaseBlocker } from '../../domain/agents/deletes';

/** How long a reservation holds a number. */
export const RESERVATION_MINUTES = 15;


/** Row → API shape. */
export function toPhoneNumber(r: any): PhoneNumber {
  return {
    id: r.id,
    e164: r.e164,
    status: r.status,
    reservedUntil: r.status === 'reserved' ? iso(r.reserved_until) : null,
    purchasedAt: iso(r.purchased_at),
    agentId: r.agent_id ?? null,
    smsEnabled: r.sms_enabled,
    createdAt: iso(r.created_at)!,
  };
}

/** Numbers among `e164s` that someone holds now (purchased, or reserved and not lapsed). */
export async function heldNumbers(db: Db, e164s: string[]): Promise<Set<string>> {
  if (!e164s.length) return new Set();
  const rows = await db('phone_numbers')
    .whereIn('e164', e164s)
    .where((q) => q.where('status', 'purchased').orWhere((q2) => q2.where('status', 'reserved').where('reserved_until', '>', db.fn.now())))
    .select('e164');
  return new Set(rows.map((r) => r.e164));
}

/** Why a reservation or purchase was refused. */
export class NumberUnavailableError extends Error {
  constructor(e164: string) {
    super(`${e164} is held by someone else`);
    this.name = 'NumberUnavailableError';
  }
}

/**
 * Reserves `e164` for the organization (or extends its own reservation; its purchased number is returned as is).
 * @throws NumberUnavailableError when another organization holds it
 */
export async function reserveNumber(db: Db, orgId: string, e164: string): Promise<PhoneNumber> {
  return db.transaction(async (trx) => {
    await trx('phone_numbers')
      .insert({ id: newId('num'), org_id: orgId, e164, status: 'released', reserved_until: null })
      .onConflict('e164')
      .ignore();
    const row = await trx('phone_numbers').where({ e164 }).forUpdate().first();
    const lapsed = row.status === 'released' || (row.status === 'reserved' && new Date(row.reserved_until).getTime() <= Date.now());
    if (row.org_id === orgId && row.status === 'purchased') return toPhoneNumber(row);
    if (row.org_id !== orgId && !lapsed) throw new NumberUnavailableError(e164);
    const [updated] = await trx('phone_numbers')
      .where({ e164 })
      .update({
        // A lapsed row of another organization gets a fresh id: ids never move between organizations.
        ...(row.org_id !== orgId ? { id: newId('num'), agent_id: null, sms_enabled: false, created_at: trx.fn.now() } : {}),
        org_id: orgId,
        status: 'reserved',
        reserved_until: trx.raw(`now() + make_interval(mins => ?)`, [RESERVATION_MINUTES]),
        updated_at: trx.fn.now(),
      })
      .returning('*');
    return toPhoneNumber(updated);
  });
}

/**
 * Turns the organization's reservation into a purchase, inside `purchase` (which records the provider
 * call and the usage entry in the same transaction).
 * @returns the number, `purchasedNow` false when it was purchased before (idempotent)
 * @throws NumberUnavailableError when the reservation lapsed and someone else holds the number
 */
export async function purchaseReserved(
  db: Db,
  orgId: string,
  numberId: string,
  purchase: (trx: Db, n: PhoneNumber) => Promise<void>,
): Promise<{ number: PhoneNumber; purchasedNow: boolean } | undefined> {
  return db.transaction(async (trx) => {
    const row = await trx('phone_numbers').where({ id: numberId, org_id: orgId }).forUpdate().first();
    if (!row || row.status === 'released') return undefined;
    if (row.status === 'purchased') return { number: toPhoneNumber(row), purchasedNow: false };
    const [updated] = await trx('phone_numbers')
      .where({ id: numberId })
      .update({ status: 'purchased', purchased_at: trx.fn.now(), reserved_until: null, updated_at: trx.fn.now() })
      .returning('*');
    const n = toPhoneNumber(updated);
    await purchase(trx, n);
    return { number: n, purchasedNow: true };
  });
}

/** A number of the organization by id (reserved ones whose hold lapsed still show as reserved to their org until reused). */
export async function getNumber(db: Db, orgId: string, id: string): Promise<PhoneNumber | undefined> {
  const row = await db('phone_numbers').where({ id, org_id: orgId }).whereNot({ status: 'released' }).first();
  return row ? toPhoneNumber(row) : undefined;
}

/** The organization's purchased number with this E.164, or undefined. */
export async function getOwnedNumberByE164(db: Db, orgId: string, e164: string): Promise<PhoneNumber | undefined> {
  const row = await db('phone_numbers').where({ e164, org_id: orgId, status: 'purchased' }).first();
  return row ? toPhoneNumber(row) : undefined;
}

/** The E.164 of the agent's purchased, SMS-enabled number (the oldest when it has several), or undefined. */
export async function getAgentNumberForSms(db: Db, orgId: string, agentId: string): Promise<string | undefined> {
  const row = await db('phone_numbers').where({ org_id: orgId, agent_id: agentId, status: 'purchased', sms_enabled: true }).orderBy('seq').first('e164');
  return row?.e164;
}

/** A purchased number with its organization. */
export interface NumberOwner {
  orgId: string;
  number: PhoneNumber;
}

/** Organization owning a purchased number (inbound texts carry only the number: necessarily a cross-organization lookup). */
export async function findOwnerOfNumber(db: Db, e164: string): Promise<NumberOwner | undefined> {
  const row = await db('phone_numbers').where({ e164, status: 'purchased' }).first();
  return row ? { orgId: row.org_id, number: toPhoneNumber(row) } : undefined;
}

/** Sets the agent of a purchased or reserved number. @returns the number or undefined when not the org's */
export async function assignNumber(db: Db, orgId: string, id: string, agentId: string | null): Promise<PhoneNumber | undefined> {
  const [row] = await db('phone_numbers').where({ id, org_id: orgId }).whereNot({ status: 'released' }).update({ agent_id: agentId, updated_at: db.fn.now() }).returning('*');
  return row ? toPhoneNumber(row) : undefined;
}

/** Sets the SMS toggle of a purchased number. @returns the number, or undefined when the org has no such purchased number */
export async function setSmsEnabled(db: Db, orgId: string, id: string, enabled: boolean): Promise<PhoneNumber | undefined> {
  const [row] = await db('phone_numbers').where({ id, org_id: orgId, status: 'purchased' }).update({ sms_enabled: enabled, updated_at: db.fn.now() }).returning('*');
  return row ? toPhoneNumber(row) : undefined;
}

/** One page of the organization's purchased numbers (oldest first). */
export async function listOwnedNumbers(db: Db, orgId: string, opts: { limit: number; cursor?: string }): Promise<Page<PhoneNumber>> {
  return keysetPage(db('phone_numbers').where({ org_id: orgId, status: 'purchased' }), { ...opts, column: 'seq', map: toPhoneNumber });
}

/** What releasing a number found (docs/api-notes.md "Deletes"). */
export type NumberRelease =
  | { kind: 'not_found' }
  | { kind: 'assigned'; number: PhoneNumber }
  | { kind: 'released'; number: PhoneNumber; purchased: boolean; providerNumberId: string | null };

/**
 * Releases a number the organization holds, its row locked throughout: refused while assigned to an agent
 * (`numberReleaseBlocker`); a purchased number is first released at the provider by `release` (given the provider's
 * number id from the purchase's intent; it runs before the row changes and may throw, leaving the number held);
 * then the row becomes `released` (unassigned, SMS off) and `after` runs in the same transaction (the event).
 * A reservation is simply let go (nothing was bought).
 */
export async function releaseHeldNumber(
  db: Db,
  orgId: string,
  id: string,
  release: (trx: Knex.Transaction, n: PhoneNumber, providerNumberId: string | null) => Promise<void>,
  after: (trx: Knex.Transaction, n: PhoneNumber, released: { purchased: boolean; providerNumberId: string | null }) => Promise<unknown>,
): Promise<NumberRelease> {
  return db.transaction(async (trx) => {
    const row = await trx('phone_numbers').where({ id, org_id: orgId }).whereNot({ status: 'released' }).forUpdate().first();
    if (!row) return { kind: 'not_found' as const };
    const n = toPhoneNumber(row);
    if (numberReleaseBlocker(n)) return { kind: 'assigned' as const, number: n };
    const purchased = row.status === 'purchased';
    const intent = purchased ? await trx('provider_intents').where({ org_id: orgId, kind: 'number_purchase', reference: id }).first('result') : undefined;
    const providerNumberId: string | null = intent?.result?.providerNumberId ?? null;
    if (purchased) await release(trx, n, providerNumberId);
    const [updated] = await trx('phone_numbers')
      .where({ id, org_id: orgId })
      .update({ status: 'released', agent_id: null, sms_enabled: false, reserved_until: null, updated_at: trx.fn.now() })
      .returning('*');
    const released = toPhoneNumber(updated);
    await after(trx, released, { purchased, providerNumberId });
    return { kind: 'released' as const, number: released, purchased, providerNumberId };
  });
}
