/**
 * Phone call request and response types (docs/api-notes.md "Calls on demand"; spec "Outbound" and
 * "Observe": payloads "not shown", decided here): `POST /calls` places one outbound call answered by an
 * agent, `GET /calls` and `GET /calls/{id}` read every call — inbound, campaign and on demand.
 */

/**
 * Body of `POST /calls` (createCall, outbound:write; `Idempotency-Key` required).
 * @additionalProperties false
 */
export interface CallCreate {
  /** The agent that talks once the call is answered (`agt_…`). @pattern ^agt_[A-Za-z0-9]{8,40}$ */
  agentId: string;
  /** Caller id: a number the organization purchased, E.164. @pattern ^\+[1-9][0-9]{6,14}$ */
  from: string;
  /** The person to call: a US number, E.164. @pattern ^\+[1-9][0-9]{6,14}$ */
  to: string;
  /** `published` (default): the agent's published version; `draft`: its current draft, compiled when the call connects. */
  mode?: 'published' | 'draft';
  /**
   * The recipient's IANA time zone when known (e.g. `America/Chicago`); otherwise the zones of the
   * number's area code decide the calling window (recipient-local 08:00–21:00), as for campaign contacts.
   * @minLength 1 @maxLength 64
   */
  timeZone?: string;
  /** Values of conversation variables (`{{name}}` in persona, instructions and greeting); they override the agent's defaults. @maxProperties 50 */
  variables?: { [name: string]: string };
  /** Free-form labels kept with the call and its conversation (at most 50 keys). @maxProperties 50 */
  metadata?: { [key: string]: string | number | boolean | null };
}

/** A voicemail a caller left on the call (phone settings "voicemail"), when one was recorded. */
export interface CallRecording {
  /** Length of the recording, seconds. */
  durationSeconds: number | null;
  /** The carrier's transcription, when it sent one. */
  transcript: string | null;
  /** @format date-time */
  receivedAt: string | null;
}

/** Where the call was transferred, when it was. */
export interface CallTransfer {
  /** The number or SIP URI dialed. */
  to: string;
  /** The escalation destination used (`esc_…`), when one was. */
  destinationId: string | null;
}

/** A phone call (a row of `voice_calls`). */
export interface Call {
  /** `call_…` */
  id: string;
  direction: 'inbound' | 'outbound';
  /** How the call came about: `inbound` (a caller rang a number), `campaign` (a campaign's dial), `api` (`POST /calls`). */
  source: 'inbound' | 'campaign' | 'api';
  /**
   * `queued` (placed by `POST /calls`, not dialed yet), `ringing`, `answered` (connected to the agent),
   * `completed` (ended after it was connected), `failed` (never connected: see `failureReason`).
   */
  status: 'queued' | 'ringing' | 'answered' | 'completed' | 'failed';
  /**
   * How the dial of a call placed by `POST /calls` ended: `answered`, `voicemail` (a machine answered),
   * `busy`, `no_answer`, `failed`, `unknown` (the carrier could not tell); null before the end and for
   * other calls.
   */
  outcome: string | null;
  /**
   * Why a failed call failed: the dial's outcome (`busy`, `no_answer`, `failed`, `unknown`), a refusal
   * (`number_unassigned`, `agent_not_published`, `outside_calling_window`, `recipient_opted_out`,
   * `recipient_do_not_call`), or the carrier's status.
   */
  failureReason: string | null;
  /** Caller, E.164. */
  from: string;
  /** Callee, E.164. */
  to: string;
  agentId: string | null;
  /** The published version the call ran; null for a call placed in `draft` mode or refused. */
  versionId: string | null;
  mode: 'published' | 'draft';
  campaignId: string | null;
  /** The conversation the call held (`GET /conversations/{id}/transcript`), once connected. */
  conversationId: string | null;
  /** Seconds connected, once the call ended. */
  durationSeconds: number | null;
  /** `sandbox`, `telnyx` or `twilio`. */
  provider: string;
  /** The carrier's call id; null until dialed. */
  providerCallId: string | null;
  /** How an inbound call was routed: `agent`, or after hours `voicemail`, `message`, `escalation`; null when not recorded. */
  routing: string | null;
  /** The message the call left on an answering machine (a campaign's voicemail drop), or null. */
  voicemailMessage: string | null;
  /** The voicemail a caller left, or null. */
  recording: CallRecording | null;
  /** The campaign's call attempt (`att_…`) this call is a dial of; null for other calls (docs/voice.md "Campaign calls"). */
  attemptId: string | null;
  /** The transfer of the call, or null. */
  transfer: CallTransfer | null;
  /** The conversation variables the call was placed with (`POST /calls`); empty for other calls. */
  variables: { [name: string]: string };
  /** The labels the call was placed with (`POST /calls`); empty for other calls. */
  metadata: { [key: string]: string | number | boolean | null };
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  endedAt: string | null;
}

/** A page of calls, newest first. */
export interface CallPage {
  items: Call[];
  nextCursor: string | null;
  hasMore: boolean;
}
