/**
 * SMS contacts: express consent (source, time, proof) and opt-out state per organization and number
 * (docs/sms.md "Numbers, consent and sending"; spec scope rule 2: the roster and the opt-out list are sms:read).
 * Every change is also appended to `sms_consent_events`, which the proof-of-consent export reads.
 */
import type { Db } from '../index';
import { newId } from '../ids';
import { keysetPage, type Page } from '../pagination';
import type { SmsContact } from '../../schemas/types/sms';
import { iso } from '../timestamps';


/** Row → API shape. */
export function toContact(r: any): SmsContact {
  return {
    e164: r.e164,
    consentStatus: r.consent_status,
    consentSource: r.consent_source ?? null,
    consentedAt: iso(r.consented_at),
    proofText: r.proof_text ?? null,
    withdrawnAt: iso(r.withdrawn_at),
    optedOut: r.opted_out,
    optedOutAt: iso(r.opted_out_at),
    optOutSource: r.opt_out_source ?? null,
    updatedAt: iso(r.updated_at)!,
  };
}

async function ensureContact(trx: Db, orgId: string, e164: string): Promise<any> {
  await trx('sms_contacts').insert({ id: newId('smsc'), org_id: orgId, e164 }).onConflict(['org_id', 'e164']).ignore();
  return trx('sms_contacts').where({ org_id: orgId, e164 }).forUpdate().first();
}

async function logEvent(trx: Db, orgId: string, e164: string, event: string, source: string | null, proofText: string | null, occurredAt: Date | string | null): Promise<void> {
  await trx('sms_consent_events').insert({ org_id: orgId, e164, event, source, proof_text: proofText, occurred_at: occurredAt ?? trx.fn.now() });
}

/**
 * Records express consent. Consent given again after an opt-out does not clear the opt-out: only the
 * recipient's own START does (CTIA: a STOP is honoured until the recipient revokes it).
 */
export async function recordConsent(db: Db, orgId: string, e164: string, c: { source: string; consentedAt: string; proofText: string }): Promise<SmsContact> {
  return db.transaction(async (trx) => {
    await ensureContact(trx, orgId, e164);
    const [row] = await trx('sms_contacts')
      .where({ org_id: orgId, e164 })
      .update({ consent_status: 'granted', consent_source: c.source, consented_at: c.consentedAt, proof_text: c.proofText, withdrawn_at: null, updated_at: trx.fn.now() })
      .returning('*');
    await logEvent(trx, orgId, e164, 'consent_granted', c.source, c.proofText, c.consentedAt);
    return toContact(row);
  });
}

/** Withdraws consent (the contact then counts as opted out, source `api`). @returns undefined when the contact is unknown */
export async function withdrawConsent(db: Db, orgId: string, e164: string): Promise<SmsContact | undefined> {
  return db.transaction(async (trx) => {
    const existing = await trx('sms_contacts').where({ org_id: orgId, e164 }).forUpdate().first();
    if (!existing) return undefined;
    const [row] = await trx('sms_contacts')
      .where({ org_id: orgId, e164 })
      .update({
        consent_status: 'withdrawn',
        withdrawn_at: trx.fn.now(),
        opted_out: true,
        opted_out_at: existing.opted_out ? existing.opted_out_at : trx.fn.now(),
        opt_out_source: existing.opted_out ? existing.opt_out_source : 'api',
        updated_at: trx.fn.now(),
      })
      .returning('*');
    await logEvent(trx, orgId, e164, 'consent_withdrawn', 'api', null, null);
    return toContact(row);
  });
}

/**
 * Applies an inbound STOP or START keyword.
 * @returns `changed` false when the contact was already in that state (no second confirmation is sent)
 */
export async function applyKeyword(db: Db, orgId: string, e164: string, keyword: 'STOP' | 'START', text: string): Promise<{ contact: SmsContact; changed: boolean }> {
  return db.transaction(async (trx) => {
    const existing = await ensureContact(trx, orgId, e164);
    const optOut = keyword === 'STOP';
    if (existing.opted_out === optOut) return { contact: toContact(existing), changed: false };
    const [row] = await trx('sms_contacts')
      .where({ org_id: orgId, e164 })
      .update(
        optOut
          ? { opted_out: true, opted_out_at: trx.fn.now(), opt_out_source: 'keyword', opt_out_keyword: text.trim().slice(0, 40), updated_at: trx.fn.now() }
          : { opted_out: false, opted_out_at: null, opt_out_source: null, opt_out_keyword: null, updated_at: trx.fn.now() },
      )
      .returning('*');
    await logEvent(trx, orgId, e164, optOut ? 'opted_out' : 'opted_in', 'keyword', text.trim().slice(0, 160), null);
    return { contact: toContact(row), changed: true };
  });
}

/** A contact, or undefined. */
export async function getContact(db: Db, orgId: string, e164: string): Promise<SmsContact | undefined> {
  const row = await db('sms_contacts').where({ org_id: orgId, e164 }).first();
  return row ? toContact(row) : undefined;
}

/** One page of the roster (oldest first), or of the opt-out list when `optedOutOnly`. */
export async function listContacts(db: Db, orgId: string, opts: { limit: number; cursor?: string; optedOutOnly?: boolean }): Promise<Page<SmsContact>> {
  const q = db('sms_contacts').where({ org_id: orgId });
  if (opts.optedOutOnly) q.where({ opted_out: true });
  return keysetPage(q, { limit: opts.limit, cursor: opts.cursor, column: 'seq', map: toContact });
}

/** Every consent event of the organization, oldest first (proof-of-consent export). */
export async function listConsentEvents(db: Db, orgId: string): Promise<{ e164: string; event: string; source: string | null; proofText: string | null; occurredAt: string; recordedAt: string }[]> {
  const rows = await db('sms_consent_events').where({ org_id: orgId }).orderBy('id');
  return rows.map((r) => ({ e164: r.e164, event: r.event, source: r.source ?? null, proofText: r.proof_text ?? null, occurredAt: iso(r.occurred_at)!, recordedAt: iso(r.created_at)! }));
}
