/**
 * The sandbox telephony provider: a deterministic inventory of US numbers per area code (the same
 * search always offers the same numbers, minus those already held), purchases that always succeed, and
 * texts whose delivery receipt arrives as a signed callback after SANDBOX_TELEPHONY_DELAY_MS (default
 * 1000 ms). Magic value: a text body containing "Fail Delivery" gets a `FAILED` receipt; otherwise `DELIVERED`.
 *
 * Outbound dials (docs/voice.md "Outbound voice campaigns") end by the callee's last four digits: 0001 answered, 0002 voicemail
 * (a machine: a dial bringing a voicemail message has it recorded after the beep, docs/voice.md "Voicemail"),
 * 0003 busy, 0004 no_answer, 0005 failed, anything else answered (see sandboxDialOutcome for the
 * durations). A dial takes SANDBOX_DIAL_LATENCY_MS (default 0); inside an activity that wait ends early
 * when the activity is cancelled (its workflow gone, the worker shutting down), as a real call's wait does.
 *
 * Like the real providers (docs/operations.md "Provider calls happen once"), the sandbox does not deduplicate: every
 * dial request is a new call, a row of `sandbox_dials`; every purchase buys (and bills) again; every
 * send is a new message with a new id; all are logged in `provider_requests`. SANDBOX_DEDUPLICATE_KEYS=true
 * turns on deduplication of dials by key, as providers that take idempotency keys do. It offers the
 * look-ups real providers offer: calls by client reference or by from/to/start time, messages and
 * number orders by client reference.
 */
import crypto from 'node:crypto';
import { Context } from '@temporalio/activity';
import { parsePhoneNumberFromString } from 'libphonenumber-js';
import type { Db } from '../../db';
import { envNumber, type AppConfig } from '../../config';
import type { AvailableNumber } from '../../schemas/types/numbers';
import { logProviderRequest } from '../../db/repositories/smsProviderEvents';
import { areaCodeInfo } from '../../domain/sms/nanp';
import { logProviderExchange, providerResponseByReference, sandboxFindDial, sandboxRecordDial } from '../../db/repositories/sandboxProviders';
import type { Lookup } from '../lookup';
import { SANDBOX_PROVIDER, SandboxAdapter } from '../carrier/sandbox';
import type { CallQuery, DialOutcome, DialResult, OutgoingCall, OutgoingText, TelephonyAdapter, TelephonyOptions } from './index';

/**
 * The sandbox's magic numbers for dials, by the callee's last four digits: 0001 answered, 0002 voicemail,
 * 0003 busy, 0004 no_answer, 0005 failed; anything else answered. Durations: answered 30–119 s
 * (derived from the number), voicemail 20 s, the others 0.
 */
export function sandboxDialOutcome(to: string): { outcome: DialOutcome; durationSeconds: number } {
  const last4 = to.slice(-4);
  const magic: Record<string, DialOutcome> = { '0001': 'answered', '0002': 'voicemail', '0003': 'busy', '0004': 'no_answer', '0005': 'failed' };
  const outcome = magic[last4] ?? 'answered';
  const durationSeconds = outcome === 'answered' ? 30 + (crypto.createHash('sha256').update(to).digest().readUInt16BE(0) % 90) : outcome === 'voicemail' ? 20 : 0;
  return { outcome, durationSeconds };
}

/** Numbers the sandbox offers per area code. */
export const SANDBOX_INVENTORY_SIZE = 40;
/** Monthly price of a sandbox long code, US cents. */
export const SANDBOX_MONTHLY_PRICE_CENTS = 115;

/**
 * The sandbox inventory of an area code: up to SANDBOX_INVENTORY_SIZE valid numbers derived from a hash
 * of the area code (no N11 or 555 exchanges), in ascending order. Empty for a non-US area code.
 */
export function sandboxInventory(areaCode: string): AvailableNumber[] {
  const info = areaCodeInfo(areaCode);
  if (!info) return [];
  const seen = new Set<string>();
  for (let i = 0; seen.size < SANDBOX_INVENTORY_SIZE && i < SANDBOX_INVENTORY_SIZE * 4; i++) {
    const h = crypto.createHash('sha256').update(`sandbox-inventory:${areaCode}:${i}`).digest();
    const exchange = 200 + (h.readUInt16BE(0) % 800);
    if (exchange % 100 === 11 || exchange === 555 || exchange === 976 || exchange === 950) continue;
    const line = String(h.readUInt16BE(2) % 10000).padStart(4, '0');
    const e164 = `+1${areaCode}${exchange}${line}`;
    const p = parsePhoneNumberFromString(e164);
    if (!p || !p.isValid()) continue;
    seen.add(e164);
  }
  return [...seen].sort().map((e164) => ({
    e164,
    areaCode,
    region: info.state,
    capabilities: { sms: true, voice: true, mms: true },
    monthlyPriceCents: SANDBOX_MONTHLY_PRICE_CENTS,
  }));
}

/**
 * Waits `ms` for a sandbox call to end: inside an activity through `Context.sleep`, which throws a
 * `CancelledFailure` once the activity is cancelled (delivered on a heartbeat, or at worker shutdown);
 * outside one, a plain timer.
 */
async function dialWait(ms: number): Promise<void> {
  let ctx: Context | undefined;
  try {
    ctx = Context.current();
  } catch {
    ctx = undefined;
  }
  await (ctx ? ctx.sleep(ms) : new Promise((r) => setTimeout(r, ms)));
}

/** The sandbox telephony adapter. */
export class SandboxTelephony extends SandboxAdapter implements TelephonyAdapter {
  private readonly dialLatencyMs: number;
  private readonly deduplicateKeys: boolean;

  constructor(deps: { db: Db; config: AppConfig }, opts: TelephonyOptions = {}) {
    super(deps, opts, { env: 'SANDBOX_TELEPHONY_DELAY_MS', ms: 1000 });
    this.dialLatencyMs = opts.dialLatencyMs ?? envNumber('SANDBOX_DIAL_LATENCY_MS', 0);
    this.deduplicateKeys = opts.deduplicateKeys ?? process.env.SANDBOX_DEDUPLICATE_KEYS === 'true';
  }

  async searchNumbers(orgId: string, areaCode: string, limit: number): Promise<AvailableNumber[]> {
    await logProviderRequest(this.db, orgId, SANDBOX_PROVIDER, 'searchNumbers', { areaCode, limit });
    return sandboxInventory(areaCode);
  }

  async purchaseNumber(orgId: string, e164: string, reference?: string): Promise<{ providerNumberId: string }> {
    // A new order every time, as a real provider bills every purchase it accepts.
    const providerNumberId = `PN${crypto.randomBytes(8).toString('hex').toUpperCase()}`;
    await logProviderExchange(this.db, orgId, SANDBOX_PROVIDER, 'purchaseNumber', { e164, ...(reference ? { reference } : {}) }, { providerNumberId });
    return { providerNumberId };
  }

  /** Releases a bought number: the sandbox has no inventory to return it to, so the request is only recorded (`provider_requests`). */
  async releaseNumber(orgId: string, providerNumberId: string): Promise<void> {
    await logProviderRequest(this.db, orgId, SANDBOX_PROVIDER, 'releaseNumber', { providerNumberId });
  }

  async findNumberOrder(orgId: string, reference: string): Promise<Lookup<{ providerNumberId: string }>> {
    if (this.lookupsUnavailable) return { cannotTell: 'sandbox: number order look-ups are unavailable' };
    await logProviderRequest(this.db, orgId, SANDBOX_PROVIDER, 'findNumberOrder', { reference });
    const r = await providerResponseByReference(this.db, orgId, SANDBOX_PROVIDER, 'purchaseNumber', reference);
    return r ? { found: { providerNumberId: String(r.providerNumberId) } } : { absent: true };
  }

  async findMessage(orgId: string, reference: string): Promise<Lookup<{ providerMessageId: string; status: 'SENT' }>> {
    if (this.lookupsUnavailable) return { cannotTell: 'sandbox: message look-ups are unavailable' };
    await logProviderRequest(this.db, orgId, SANDBOX_PROVIDER, 'findMessage', { reference });
    const r = await providerResponseByReference(this.db, orgId, SANDBOX_PROVIDER, 'sendMessage', reference);
    return r ? { found: { providerMessageId: String(r.providerMessageId), status: 'SENT' } } : { absent: true };
  }

  async findCall(orgId: string, q: CallQuery): Promise<Lookup<DialResult>> {
    if (this.lookupsUnavailable) return { cannotTell: 'sandbox: call look-ups are unavailable' };
    await logProviderRequest(this.db, orgId, SANDBOX_PROVIDER, 'findCall', { ...q });
    const d = await sandboxFindDial(this.db, orgId, { reference: q.reference, from: q.from, to: q.to, since: new Date(q.sinceMs) });
    if (!d) return { absent: true };
    return { found: { providerCallId: d.providerCallId, outcome: d.outcome as DialOutcome, durationSeconds: d.durationSeconds, dialedNow: false, voicemailMessage: d.voicemailMessage } };
  }

  async sendMessage(orgId: string, text: OutgoingText): Promise<{ providerMessageId: string; status: 'SENT' }> {
    // A new message every time: a repeated send reaches the handset twice, as with a real provider.
    const providerMessageId = `SM${crypto.randomBytes(12).toString('hex')}`;
    const failed = /fail delivery/i.test(text.body);
    // The request's log line and its delivery receipt in one statement.
    await this.exchangeWithCallback(
      orgId,
      { operation: 'sendMessage', request: { from: text.from, to: text.to, reference: text.reference, mediaIds: text.mediaIds ?? [], length: text.body.length }, response: { providerMessageId } },
      {
        type: 'message.status',
        id: providerMessageId,
        status: failed ? 'FAILED' : 'DELIVERED',
        reason: failed ? 'Sandbox: delivery failed (magic value "Fail Delivery")' : null,
        reference: text.reference,
      },
      this.delayMs,
    );
    return { providerMessageId, status: 'SENT' };
  }

  async dial(orgId: string, call: OutgoingCall): Promise<DialResult> {
    const { outcome, durationSeconds } = sandboxDialOutcome(call.to);
    const providerCallId = `CA${crypto.randomBytes(12).toString('hex')}`;
    // A machine (0002) records the message spoken after its beep, when the dial brings one (docs/voice.md "Voicemail").
    const voicemailMessage = outcome === 'voicemail' && call.voicemailMessage ? call.voicemailMessage : null;
    const rec = { reference: call.idempotencyKey, from: call.from, to: call.to, providerCallId, outcome, durationSeconds, voicemailMessage };
    const { dial, created } = await sandboxRecordDial(this.db, orgId, rec, this.deduplicateKeys);
    if (created && this.dialLatencyMs > 0) await dialWait(this.dialLatencyMs);
    return { providerCallId: dial.providerCallId, outcome: dial.outcome as DialOutcome, durationSeconds: dial.durationSeconds, dialedNow: created, voicemailMessage: dial.voicemailMessage };
  }
}
