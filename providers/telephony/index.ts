/**
 * The telephony interface (DESIGN.md "Providers": `telephony`, number inventory and SMS). The sandbox
 * is the default; delivery receipts and inbound texts come back as signed callbacks to
 * `POST /sms/provider-callbacks/{provider}`.
 */
import type { Db } from '../../db';
import type { AppConfig } from '../../config';
import type { AvailableNumber } from '../../schemas/types/numbers';
import { SandboxTelephony } from './sandbox';
import { TelnyxTelephony } from './telnyx';
import { TwilioTelephony } from './twilio';
import type { Lookup } from '../lookup';
import type { SandboxOptions } from '../carrier/sandbox';
import { instrumentProvider } from '../../metrics';

/** A text to send. */
export interface OutgoingText {
  from: string;
  to: string;
  body: string;
  mediaIds?: string[];
  /** Our message id (`msg_…`), echoed in delivery callbacks. */
  reference: string;
}

/** An outbound call to place (docs/voice.md "Outbound voice campaigns"). */
export interface OutgoingCall {
  /** Caller id: the organization's own number, E.164. */
  from: string;
  to: string;
  /**
   * Client reference of the dial (`{attemptId}:{dial number}`), echoed by the provider (as a status
   * callback parameter, the way voice APIs without idempotency keys carry one). The provider does not
   * deduplicate on it: a second request is a second call (docs/operations.md "Provider calls happen once").
   */
  idempotencyKey: string;
  /** Agent that handles the call once answered. */
  agentId: string;
  /**
   * The campaign placing the call: an answered call (a person, by answering-machine detection) is
   * then connected to `agentId` over the ConversationRelay, the agent greeting first. Absent: the dial
   * is an outcome only.
   */
  campaignId?: string;
  /**
   * The stored call of a call placed by `POST /calls` (`call_…`; docs/api-notes.md "Calls on demand"): an
   * answered call (a person) is connected to `agentId` over the ConversationRelay as that call, the agent
   * greeting first, as a campaign call is.
   */
  callId?: string;
  /**
   * The message to leave when a machine answers (docs/voice.md "Voicemail"): the campaign's agent's voicemail
   * message, variables filled. The call is placed with answering-machine detection that waits for the end
   * of the greeting (Twilio `MachineDetection=DetectMessageEnd`, Telnyx `greeting_end`); the message is
   * spoken after the beep and the call hung up. Absent: a machine is only the `voicemail` outcome.
   */
  voicemailMessage?: string;
}

/**
 * An answered outbound call an adapter hands to the conversation runtime (a person, or a machine at its
 * beep): a campaign's dial, or a call placed by `POST /calls`.
 */
export interface AnsweredCampaignCall {
  orgId: string;
  agentId: string;
  /** The campaign of a campaign dial; null for a call placed by `POST /calls` (`callId` names it). */
  campaignId: string | null;
  /** The stored call of a call placed by `POST /calls` (`call_…`); absent for a campaign dial. */
  callId?: string;
  /** The provider's id of the dial (its voice_calls row is unique on it). */
  providerCallId: string;
  provider: string;
  /** Our caller id and the contact, E.164. */
  from: string;
  to: string;
}

/**
 * The port by which a carrier adapter that drives answered calls itself (Telnyx Call Control) hands a
 * campaign call to the agent. Implemented by services/voice/handoff.ts and composed where the dialing
 * activities are built (activities/outbound.ts), so every process that dials has it.
 */
export interface CampaignCallHandoff {
  /**
   * Stores the answered call (pinned to the agent's published version) and mints its relay reference.
   * @returns the relay's WebSocket URL with the call's id, language (BCP 47), DTMF setting and the carrier's
   *   voice id for the agent's voice (domain/voice/carrierVoices.ts); null when the
   *   agent is no longer published (the call is stored `failed` and the adapter hangs up)
   */
  connect(call: AnsweredCampaignCall): Promise<{ callId: string; relayUrl: string; language?: string; dtmfEnabled: boolean; voice?: string | null } | null>;
  /**
   * Stores a call that reached a machine at its beep with the campaign's voicemail message, and its
   * `voice` conversation (docs/voice.md "Voicemail"). @returns the message and its language; null when the
   *   campaign's agent has no voicemail message, or for a call that is not a campaign's
   */
  leaveVoicemail(call: AnsweredCampaignCall): Promise<{ message: string; language: string } | null>;
}

/** How a call ended. */
export type DialOutcome = 'answered' | 'voicemail' | 'busy' | 'no_answer' | 'failed';

/** Result of a dial. */
export interface DialResult {
  providerCallId: string;
  outcome: DialOutcome;
  /** Seconds connected (0 unless answered or voicemail). */
  durationSeconds: number;
  /** False when this answer is a call placed earlier (a look-up, or the sandbox's optional key deduplication). */
  dialedNow: boolean;
  /** The message left on the callee's voicemail (docs/voice.md "Voicemail"); absent or null when none was left. */
  voicemailMessage?: string | null;
}

/** A call to find (the look-ups voice APIs offer: by the client reference, or by to/from/start time). */
export interface CallQuery {
  reference: string;
  from: string;
  to: string;
  /** Earliest start of the call, ms since the epoch. */
  sinceMs: number;
  /** The dial's agent and campaign (or placed call): a call found still ringing or talking is connected as the dial would have. */
  agentId?: string;
  campaignId?: string;
  callId?: string;
  /** The dial's voicemail message: a call found still up at a machine leaves it as the dial would have. */
  voicemailMessage?: string;
}

/**
 * A telephony adapter. Every request appends a row to `provider_requests` (dials: their own ledger,
 * `sandbox_dials`). Purchases, texts and dials are NOT idempotent at the provider: callers go through
 * `performOnce` (services/effects.ts) and use the look-ups on a retry.
 */
export interface TelephonyAdapter {
  readonly provider: string;
  /** Numbers available in a US area code, in a stable order. @param limit 1..200 */
  searchNumbers(orgId: string, areaCode: string, limit: number): Promise<AvailableNumber[]>;
  /** Buys a number; `reference` (our number id) is the order's client reference. @returns the provider's id of the number */
  purchaseNumber(orgId: string, e164: string, reference?: string): Promise<{ providerNumberId: string }>;
  /** Hands a text to the network. @returns the provider's message id; delivery is reported later by callback */
  sendMessage(orgId: string, text: OutgoingText): Promise<{ providerMessageId: string; status: 'SENT' }>;
  /** Places an outbound call and waits for its end. Every request is a call (no deduplication). */
  dial(orgId: string, call: OutgoingCall): Promise<DialResult>;
  /** The number order placed with this client reference. */
  findNumberOrder(orgId: string, reference: string): Promise<Lookup<{ providerNumberId: string }>>;
  /** The text sent with this client reference (our message id). */
  findMessage(orgId: string, reference: string): Promise<Lookup<{ providerMessageId: string; status: 'SENT' }>>;
  /** The call placed with this reference, else from `from` to `to` since `sinceMs`, with its outcome. */
  findCall(orgId: string, query: CallQuery): Promise<Lookup<DialResult>>;
  /**
   * Transfers a call the adapter drives itself (Telnyx Call Control `actions/transfer`) to `to` (E.164 or a SIP
   * URI); TwiML carriers transfer by the markup of the relay's `<Connect action>` instead and omit it.
   * @param reference our call id: the command's idempotency (`command_id`)
   */
  transferCall?(orgId: string, providerCallId: string, to: string, reference: string): Promise<void>;
  /** Releases a number the organization holds (real providers; the sandbox keeps no inventory to return it to). */
  releaseNumber?(orgId: string, providerNumberId: string): Promise<void>;
}

/**
 * Options of the sandbox telephony adapter: `delayMs` is the delay of delivery callbacks, ms
 * (SANDBOX_TELEPHONY_DELAY_MS, default 1000).
 */
export interface TelephonyOptions extends SandboxOptions {
  /** Latency of a sandbox dial, ms (SANDBOX_DIAL_LATENCY_MS, default 0). */
  dialLatencyMs?: number;
  /** Deduplicate dials by key, as providers that take keys do (SANDBOX_DEDUPLICATE_KEYS, default false). */
  deduplicateKeys?: boolean;
}

/**
 * What adapters need: the database, the configuration and, for adapters that connect answered campaign
 * calls themselves (Telnyx), the handoff to the agent; without it such a call is hung up (no agent to
 * hand it to), which only processes that never dial (the API's number search) may accept.
 */
export interface TelephonyDeps {
  db: Db;
  config: AppConfig;
  handoff?: CampaignCallHandoff;
}

/** The name of the configured telephony provider (TELEPHONY_PROVIDER, default `sandbox`), as stored on calls. */
export function telephonyProviderName(): string {
  return process.env.TELEPHONY_PROVIDER || 'sandbox';
}

/**
 * The configured telephony provider (TELEPHONY_PROVIDER: `sandbox`, the default, `telnyx` or `twilio`;
 * docs/going-live.md). @throws for an unknown name, or a real provider whose settings are missing
 */
export function createTelephony(deps: TelephonyDeps, opts: TelephonyOptions = {}): TelephonyAdapter {
  const name = telephonyProviderName();
  if (name === 'telnyx') return instrumentProvider('telephony', name, new TelnyxTelephony(deps));
  if (name === 'twilio') return instrumentProvider('telephony', name, new TwilioTelephony(deps));
  if (name !== 'sandbox') throw new Error(`TELEPHONY_PROVIDER=${name} is not supported; use "sandbox", "telnyx" or "twilio"`);
  return instrumentProvider('telephony', name, new SandboxTelephony(deps, opts));
}
