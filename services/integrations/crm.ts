/**
 * The CRM on its real API for a connection made on it (provider `hubspot`: docs/going-live.md "HubSpot";
 * docs/api-notes.md "Integrations and records"), through the connection's adapter's CRM operations
 * (providers/integrations `IntegrationsAdapter.crm`):
 * - `lookup_record` with `integration: hubspot` searches the CRM's contacts by phone, e-mail or name at run time
 *   and upserts the matches into the organization's Records (source: the kind, by contact id), so the skill
 *   answers Records as it does for a synced CRM;
 * - when a conversation has ended and its analysis has a summary, the summary is written back as a note on the
 *   caller's contact (upserted by e-mail, else found or created by phone), once, through `performOnce`
 *   (services/effects.ts): the note carries a reference its look-up finds, so a retried activity never writes twice.
 * Every HubSpot call takes the connection's access token from {@link hubspotAccessToken}.
 */
import type { Db } from '../../db';
import { getConnection, setConnectionError, type ConnectionRecord } from '../../db/repositories/integrations';
import { findRecordsByExternalIds, upsertSourcedRecords } from '../../db/repositories/records';
import type { CustomerRecord } from '../../schemas/types/integrations';
import { getConversation } from '../../db/repositories/conversations';
import { getAnalysis } from '../../db/repositories/conversationAnalyses';
import { resolveIntent } from '../../db/repositories/providerIntents';
import { integrationsAdapter, type ContactQuery, type CrmOperations } from '../../providers/integrations';
import { performOnce, type FaultHook } from '../effects';
import { recordWriter } from '../records/sealing';
import { connectionSecrets } from './connections';

/** The CRM operations of a connection made on a CRM's live API (its `provider`'s adapter); null for the sandbox's. */
export function crmOf(c: Pick<ConnectionRecord, 'provider'>): CrmOperations | null {
  return integrationsAdapter(process.env, c.provider).crm;
}

/**
 * The access token of a HubSpot connection: the one place HubSpot calls get it. A private app's token as stored;
 * an OAuth access token refreshed first when it expires within a minute, the new tokens stored sealed; a refused
 * refresh (`invalid_grant`) marks the connection `needs_reauth` with `integration.needs_reauth`
 * (./connections.ts `connectionSecrets`).
 * @throws ConnectionNeedsReauthError; IntegrationProviderError when the refresh could not be made; Error when the
 *   credentials hold no token
 */
export async function hubspotAccessToken(db: Db, c: ConnectionRecord): Promise<string> {
  const token = (await connectionSecrets(db, c)).accessToken;
  if (!token) throw new Error(`The HubSpot connection ${c.id} holds no access token`);
  return token;
}

/**
 * Searches HubSpot's contacts and keeps the matches as Records (source `hubspot`; sensitive fields sealed as
 * the records sync seals them).
 * @returns the matching Records, in HubSpot's order
 * @throws IntegrationProviderError (the connection's last error is set)
 */
export async function lookupCrmContacts(db: Db, orgId: string, c: ConnectionRecord, by: ContactQuery, limit: number, crm: CrmOperations | null = crmOf(c)): Promise<CustomerRecord[]> {
  if (!crm) throw new Error(`The ${c.kind} connection ${c.id} is not on a CRM's live API`);
  let items;
  try {
    items = await crm.searchContacts(await hubspotAccessToken(db, c), by, limit);
  } catch (err) {
    await setConnectionError(db, orgId, c.id, err instanceof Error ? err.message : String(err));
    throw err;
  }
  if (!items.length) return [];
  return db.transaction(async (trx) => {
    const protect = await recordWriter(trx, orgId);
    await upsertSourcedRecords(trx, orgId, c.kind, c.id, items.map((row) => ({ ...row, ...protect(row.fields) })));
    return findRecordsByExternalIds(trx, orgId, c.kind, items.map((i) => i.externalId));
  });
}

/** What the write-back did. */
export type NoteWriteBack =
  | { status: 'written'; noteId: string; contactId: string; performedNow: boolean }
  | { status: 'unknown'; reason: string }
  | { status: 'skipped'; reason: 'not_connected' | 'no_conversation' | 'not_live' | 'no_summary' | 'no_contact' };

/** The reference a conversation's note carries (one search token: letters and digits only). */
export function noteReference(conversationId: string): string {
  return `acpnote${conversationId.replace(/[^A-Za-z0-9]/g, '')}`;
}

/**
 * Writes an ended conversation's summary to the caller's HubSpot contact as a note, once per conversation.
 * Skipped (nothing written) without a HubSpot API connection, for a simulation or stubbed conversation, without
 * a summary, or without the caller's phone or e-mail.
 * @throws IntegrationProviderError (the activity retries; the intent stays pending and a retry looks the note up)
 */
export async function writeBackConversationNote(db: Db, orgId: string, conversationId: string, opts: { crm?: CrmOperations; fault?: FaultHook } = {}): Promise<NoteWriteBack> {
  const c = await getConnection(db, orgId, 'hubspot');
  const live = c ? crmOf(c) : null;
  if (!c || !live) return { status: 'skipped', reason: 'not_connected' };
  const conv = await getConversation(db, orgId, conversationId);
  if (!conv) return { status: 'skipped', reason: 'no_conversation' };
  if (conv.simulation || conv.skillStubs) return { status: 'skipped', reason: 'not_live' };
  const summary = (await getAnalysis(db, orgId, conversationId))?.summary;
  if (!summary) return { status: 'skipped', reason: 'no_summary' };
  const v = conv.variables ?? {};
  const phone = v.caller_phone || v.phone || null;
  const email = v.email || null;
  if (!phone && !email) return { status: 'skipped', reason: 'no_contact' };
  const crm = opts.crm ?? live;
  const token = await hubspotAccessToken(db, c);
  const reference = noteReference(conversationId);
  const [firstname, ...rest] = (v.name ?? '').trim().split(/\s+/);
  const outcome = await performOnce(db, orgId, {
    kind: 'crm_note',
    reference,
    subjectId: conversationId,
    provider: c.provider,
    request: { conversationId, channel: conv.channel },
    perform: async () => {
      const contactId = await crm.upsertContact(token, { email, phone, firstname: firstname || null, lastname: rest.join(' ') || null });
      const noteId = await crm.createNote(token, { contactId, body: `Conversation ${conversationId} (${conv.channel}): ${summary}`, timestamp: new Date().toISOString(), reference });
      return { noteId, contactId };
    },
    lookup: async (intent) => {
      const seen = await crm.findNote(token, reference, intent.createdAt);
      return 'found' in seen ? { found: { noteId: seen.found.noteId, contactId: '' } } : seen;
    },
    fault: opts.fault,
  });
  if (outcome.state === 'unknown') return { status: 'unknown', reason: outcome.reason };
  await resolveIntent(db, orgId, outcome.intent.id, outcome.result);
  await opts.fault?.('after_record', 'crm_note', reference);
  return { status: 'written', noteId: outcome.result.noteId, contactId: outcome.result.contactId, performedNow: outcome.performedNow };
}
