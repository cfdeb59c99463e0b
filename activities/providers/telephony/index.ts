/**
 * The telephony interface (DESIGN.md "Providers": `telephony`, number inventory and SMS). The sandbox
 * is the default; delivery receipts and inbound texts come back as signed callbacks to
 * `POST /sms/provider-callbacks/{provider}`.
 */
import type { Db } from '../../../db';
import type { AppConfig } from '../../../config';
import type { AvailableNumber } from '../../../schemas/types/numbers';
import { SandboxTelephony } from './sandbox';

/** A text to send. */
export interface OutgoingText {
  from: string;
  to: string;
  body: string;
  mediaIds?: string[];
  /** Our message id (`msg_…`), echoed in delivery callbacks. */
  reference: string;
}

/** An outbound call to place (README "Outbound voice campaigns"). */
export interface OutgoingCall {
  /** Caller id: the organization's own number, E.164. */
  from: string;
  to: string;
  /** One key per dial (`{attemptId}:{dial number}`): the same key never dials twice and answers the first result. */
  idempotencyKey: string;
  /** Agent that handles the call once answered. */
  agentId: string;
}

/** How a call ended. */
export type DialOutcome = 'answered' | 'voicemail' | 'busy' | 'no_answer' | 'failed';

/** Result of a dial. */
export interface DialResult {
  providerCallId: string;
  outcome: DialOutcome;
  /** Seconds connected (0 unless answered or voicemail). */
  durationSeconds: number;
  /** False when the key was dialed before and this is the stored result. */
  dialedNow: boolean;
}

/** A telephony adapter. Every call appends a row to `provider_requests` (dials: their own ledger). */
export interface TelephonyAdapter {
  readonly provider: string;
  /** Numbers available in a US area code, in a stable order. @param limit 1..200 */
  searchNumbers(orgId: string, areaCode: string, limit: number): Promise<AvailableNumber[]>;
  /** Buys a number. @returns the provider's id of the number */
  purchaseNumber(orgId: string, e164: string): Promise<{ providerNumberId: string }>;
  /** Hands a text to the network. @returns the provider's message id; delivery is reported later by callback */
  sendMessage(orgId: string, text: OutgoingText): Promise<{ providerMessageId: string; status: 'SENT' }>;
  /** Places an outbound call and waits for its end. Idempotent on `call.idempotencyKey`. */
  dial(orgId: string, call: OutgoingCall): Promise<DialResult>;
}

/** Options of the sandbox telephony adapter. */
export interface TelephonyOptions {
  /** Delay of delivery callbacks, ms (SANDBOX_TELEPHONY_DELAY_MS, default 1000). */
  delayMs?: number;
  callbackUrl?: string;
  /** Latency of a sandbox dial, ms (SANDBOX_DIAL_LATENCY_MS, default 0). */
  dialLatencyMs?: number;
}

/** The configured telephony provider (TELEPHONY_PROVIDER, default `sandbox`). @throws for an unknown name */
export function createTelephony(deps: { db: Db; config: AppConfig }, opts: TelephonyOptions = {}): TelephonyAdapter {
  const name = process.env.TELEPHONY_PROVIDER || 'sandbox';
  if (name !== 'sandbox') throw new Error(`TELEPHONY_PROVIDER=${name} is not supported; only "sandbox" is built in`);
  return new SandboxTelephony(deps, opts);
}
