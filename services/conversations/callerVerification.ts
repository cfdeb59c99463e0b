/**
 * Caller verification against the organization's Records (docs/api-notes.md
 * "Caller verification"; the rules are in domain/conversations/callerVerification.ts): the lookup when a
 * conversation starts and the PIN comparison of method `pin`. Every read of Records is an audit entry
 * (actor kind `agent`, actor id the conversation, operation `callerVerification`), as the records routes
 * and the `lookup_record` skill write them. Records of another organization never match: the lookup is
 * scoped by organization in the data layer.
 */
import crypto from 'node:crypto';
import type { Db } from '../../db';
import { insertAuditLogs } from '../../db/repositories/auditLogs';
import { findRecords } from '../../db/repositories/records';
import type { CompiledAgent } from '../../domain/agents/compile';
import { effectiveCallerVerification } from '../../domain/agents/compile';
import {
  DEFAULT_PIN_FIELD,
  identityVariables,
  startVariables,
  VERIFICATION_VARIABLES,
  type CallerIdentity,
  type VerificationRecord,
} from '../../domain/conversations/callerVerification';
import type { CustomerRecord } from '../../schemas/types/integrations';
import { openRecordField } from '../records/sealing';

/** Whether the record holds a PIN: reads show a sealed one masked (docs/security.md "Sensitive record fields"), never its digits. */
const pinOf = (r: CustomerRecord, field: string): string => (r.fields?.[field] ?? '').trim();

function asVerification(r: CustomerRecord, pinField: string): VerificationRecord {
  return { id: r.id, name: r.name, email: r.email, phone: r.phone, hasPin: pinOf(r, pinField) !== '' };
}

/** Records matching the identity (at most 2), with the read audited. */
async function lookup(db: Db, orgId: string, conversationId: string, id: CallerIdentity, step: 'lookup' | 'pin'): Promise<CustomerRecord[]> {
  if (!id.phone && !id.email) return [];
  const found = await findRecords(db, orgId, id.phone ? { phone: id.phone } : { email: id.email }, 2);
  await insertAuditLogs(db, [
    {
      orgId,
      rec: {
        actorId: conversationId,
        actorKind: 'agent',
        operationId: 'callerVerification',
        method: 'VERIFY',
        path: `/conversations/${conversationId}/caller-verification/${step}`,
        resourceType: 'record',
        resourceId: found.length === 1 ? found[0].id : null,
        requestId: conversationId,
        sourceIp: null,
        statusCode: found.length ? 200 : 404,
      },
    },
  ]);
  return found;
}

/**
 * The variables a new conversation starts with when the agent verifies callers (unchanged when it does
 * not): the session's, with the caller's identity and the verification outcome (a session's own `caller_verified` and the other
 * verification variables are replaced, so a client cannot claim a verified caller).
 * @param conversationId the id the conversation will have (the audit entry's actor)
 */
export async function verifyCallerAtStart(
  db: Db,
  orgId: string,
  conversationId: string,
  agent: CompiledAgent,
  identity: CallerIdentity,
  vars: Record<string, string>,
): Promise<Record<string, string>> {
  const cv = effectiveCallerVerification(agent.callerVerification);
  if (!cv.enabled) return vars;
  const out: Record<string, string> = { ...vars, ...identityVariables(identity) };
  for (const k of VERIFICATION_VARIABLES) delete out[k];
  const pinField = cv.pinField ?? DEFAULT_PIN_FIELD;
  const supported = cv.method === 'caller_id' || cv.method === 'pin';
  const matches = supported ? (await lookup(db, orgId, conversationId, identity, 'lookup')).map((r) => asVerification(r, pinField)) : [];
  return { ...out, ...startVariables(cv, identity, matches) };
}

/** Constant-time comparison of two PINs (digests of equal length). */
function samePin(a: string, b: string): boolean {
  const h = (s: string) => crypto.createHash('sha256').update(s).digest();
  return crypto.timingSafeEqual(h(a), h(b));
}

/**
 * The runtime's `checkPin` port for a conversation: the caller's record is looked up again by the
 * identity the conversation started with (`caller_phone`, else `caller_email`) and its PIN field — sealed,
 * opened here only (services/records/sealing.ts) — compared in constant time. Neither the PIN nor the
 * comparison ever reaches the model (OWASP ASVS V8.3.1).
 */
export function pinChecker(db: Db, orgId: string, conversationId: string, agent: CompiledAgent, vars: Readonly<Record<string, string>>): (pin: string) => Promise<VerificationRecord | null> {
  return async (pin) => {
    const pinField = effectiveCallerVerification(agent.callerVerification).pinField ?? DEFAULT_PIN_FIELD;
    const identity: CallerIdentity = vars.caller_phone ? { phone: vars.caller_phone } : vars.caller_email ? { email: vars.caller_email } : {};
    const found = await lookup(db, orgId, conversationId, identity, 'pin');
    if (found.length !== 1) return null;
    const expected = ((await openRecordField(db, orgId, found[0].id, pinField)) ?? '').trim();
    return expected && samePin(expected, pin) ? asVerification(found[0], pinField) : null;
  };
}
