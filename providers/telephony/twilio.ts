/**
 * The Twilio telephony adapter (TELEPHONY_PROVIDER=twilio; docs/going-live.md "Twilio") on the official
 * `twilio` SDK (API 2010-04-01): number search (`AvailablePhoneNumbers/US/Local`), purchase
 * (`IncomingPhoneNumbers`, our number id as `FriendlyName`, its SMS webhook ours and its voice webhook
 * the voice webhook URL) and release; texts (`Messages`, `StatusCallback` ours with `org` and `ref`);
 * outbound calls (`Calls`, `Url` = the voice webhook — a campaign's with `org`, `agt` and `cmp` in its
 * query, a call placed by our `POST /calls` with `org`, `agt` and `call`, so the answered call is
 * connected to its agent greeting first —, `MachineDetection=Enable` with async AMD, status
 * callbacks ours) waited for until `completed`; a campaign call with a voicemail message to leave uses
 * synchronous `MachineDetection=DetectMessageEnd` instead, and the voice webhook answers a machine at its
 * beep with `<Say>` + `<Hangup/>` (docs/voice.md "Voicemail"). Look-ups for performOnce: numbers by `FriendlyName`;
 * texts by the receipts stored for our message id, else the list of messages from/to since the send
 * with the same body; calls by the reference their callbacks echoed, else the list from/to since the dial.
 */
import type twilio from 'twilio';
import type { Db } from '../../db';
import type { AppConfig } from '../../config';
import type { AvailableNumber } from '../../schemas/types/numbers';
import { ApiError } from '../../domain/errors';
import { logProviderRequest } from '../../db/repositories/smsProviderEvents';
import { getMessageRecord } from '../../db/repositories/smsMessages';
import { findProviderCallByReference, providerMessageIdByReference, recordProviderCall, updateProviderCall } from '../../db/repositories/providerWebhooks';
import type { Lookup } from '../lookup';
import type { CallQuery, DialResult, OutgoingCall, OutgoingText, TelephonyAdapter } from './index';
import { endedCallOutcome, providerCallbackUrl, voiceWebhookUrl, voicemailLeft, waitForCallEnd, withRateLimit } from './live';
import { TWILIO_PROVIDER, twilioClient, twilioErrorCode, twilioRateLimit } from './twilioClient';

/** Twilio's code for "the phone number requested is not available". */
export const TWILIO_NUMBER_UNAVAILABLE = 21422;
/** Twilio call statuses after which nothing changes. */
const TWILIO_ENDED = new Set(['completed', 'busy', 'no-answer', 'failed', 'canceled']);
/** Monthly price of a Twilio US local number, cents (Twilio's price list; search answers carry none). */
export const TWILIO_LOCAL_MONTHLY_CENTS = 115;

/** The Twilio telephony adapter. */
export class TwilioTelephony implements TelephonyAdapter {
  readonly provider = TWILIO_PROVIDER;
  private readonly db: Db;
  private readonly config: AppConfig;
  private readonly client: twilio.Twilio;

  constructor(deps: { db: Db; config: AppConfig }, client: twilio.Twilio = twilioClient()) {
    this.db = deps.db;
    this.config = deps.config;
    this.client = client;
  }

  private call<T>(fn: () => Promise<T>): Promise<T> {
    return withRateLimit(twilioRateLimit, fn);
  }

  async searchNumbers(orgId: string, areaCode: string, limit: number): Promise<AvailableNumber[]> {
    await logProviderRequest(this.db, orgId, TWILIO_PROVIDER, 'searchNumbers', { areaCode, limit });
    const list = await this.call(() => this.client.availablePhoneNumbers('US').local.list({ areaCode: Number(areaCode), smsEnabled: true, voiceEnabled: true, limit }));
    return list
      .map((n) => ({
        e164: n.phoneNumber,
        areaCode,
        region: n.region ?? null,
        capabilities: { sms: !!n.capabilities?.sms, voice: !!n.capabilities?.voice, mms: !!n.capabilities?.mms },
        monthlyPriceCents: TWILIO_LOCAL_MONTHLY_CENTS,
      }) as AvailableNumber)
      .sort((a, b) => (a.e164 < b.e164 ? -1 : 1));
  }

  /** @throws ApiError 409 `number_unavailable` when Twilio answers 21422 (the number was taken meanwhile) */
  async purchaseNumber(orgId: string, e164: string, reference?: string): Promise<{ providerNumberId: string }> {
    await logProviderRequest(this.db, orgId, TWILIO_PROVIDER, 'purchaseNumber', { e164, reference });
    try {
      const n = await this.call(() =>
        this.client.incomingPhoneNumbers.create({
          phoneNumber: e164,
          friendlyName: reference,
          smsUrl: providerCallbackUrl(this.config, TWILIO_PROVIDER),
          smsMethod: 'POST',
          voiceUrl: voiceWebhookUrl(this.config, TWILIO_PROVIDER),
          voiceMethod: 'POST',
        }),
      );
      return { providerNumberId: n.sid };
    } catch (err) {
      if (twilioErrorCode(err) === TWILIO_NUMBER_UNAVAILABLE) throw new ApiError(409, 'number_unavailable', `${e164} is no longer available at Twilio`);
      throw err;
    }
  }

  /** Releases a number (`DELETE IncomingPhoneNumbers/{sid}`). */
  async releaseNumber(orgId: string, providerNumberId: string): Promise<void> {
    await logProviderRequest(this.db, orgId, TWILIO_PROVIDER, 'releaseNumber', { providerNumberId });
    await this.call(() => this.client.incomingPhoneNumbers(providerNumberId).remove());
  }

  async findNumberOrder(orgId: string, reference: string): Promise<Lookup<{ providerNumberId: string }>> {
    await logProviderRequest(this.db, orgId, TWILIO_PROVIDER, 'findNumberOrder', { reference });
    const [n] = await this.call(() => this.client.incomingPhoneNumbers.list({ friendlyName: reference, limit: 1 }));
    return n ? { found: { providerNumberId: n.sid } } : { absent: true };
  }

  async sendMessage(orgId: string, text: OutgoingText): Promise<{ providerMessageId: string; status: 'SENT' }> {
    await logProviderRequest(this.db, orgId, TWILIO_PROVIDER, 'sendMessage', { from: text.from, to: text.to, reference: text.reference, length: text.body.length });
    const m = await this.call(() =>
      this.client.messages.create({
        from: text.from,
        to: text.to,
        body: text.body,
        statusCallback: providerCallbackUrl(this.config, TWILIO_PROVIDER, { org: orgId, ref: text.reference }),
      }),
    );
    return { providerMessageId: m.sid, status: 'SENT' };
  }

  async findMessage(orgId: string, reference: string): Promise<Lookup<{ providerMessageId: string; status: 'SENT' }>> {
    const seen = await providerMessageIdByReference(this.db, orgId, TWILIO_PROVIDER, reference);
    if (seen) return { found: { providerMessageId: seen, status: 'SENT' } };
    const ours = await getMessageRecord(this.db, orgId, reference);
    if (!ours) return { cannotTell: 'Twilio: the text to look up is not ours' };
    await logProviderRequest(this.db, orgId, TWILIO_PROVIDER, 'findMessage', { reference });
    const since = new Date(new Date(ours.createdAt).getTime() - 60_000);
    const list = await this.call(() => this.client.messages.list({ from: ours.from, to: ours.to, dateSentAfter: since, limit: 50 }));
    const m = list.find((x) => x.body === ours.body);
    return m ? { found: { providerMessageId: m.sid, status: 'SENT' } } : { absent: true };
  }

  async dial(orgId: string, call: OutgoingCall): Promise<DialResult> {
    await logProviderRequest(this.db, orgId, TWILIO_PROVIDER, 'dial', { from: call.from, to: call.to, reference: call.idempotencyKey });
    const statusCallback = providerCallbackUrl(this.config, TWILIO_PROVIDER, { org: orgId, ref: call.idempotencyKey });
    const leaveMessage = !!(call.campaignId && call.voicemailMessage);
    const c = await this.call(() =>
      this.client.calls.create({
        from: call.from,
        to: call.to,
        // A campaign call names its campaign and agent in the URL Twilio signs (a call placed by POST /calls
        // its stored call): the webhook then has the agent greet first.
        url: voiceWebhookUrl(this.config, TWILIO_PROVIDER, call.campaignId ? { org: orgId, agt: call.agentId, cmp: call.campaignId } : call.callId ? { org: orgId, agt: call.agentId, call: call.callId } : {}),
        method: 'POST',
        statusCallback,
        statusCallbackMethod: 'POST',
        statusCallbackEvent: ['initiated', 'ringing', 'answered', 'completed'],
        // A voicemail message to leave: synchronous AMD that waits for the end of a machine's greeting, so
        // Twilio asks the Url once it knows (`AnsweredBy` machine_end_* → <Say> + <Hangup/>; human → the agent).
        // Otherwise asynchronous AMD: the call is connected at once and the verdict only names the outcome.
        ...(leaveMessage ? { machineDetection: 'DetectMessageEnd' } : { machineDetection: 'Enable', asyncAmd: 'true', asyncAmdStatusCallback: statusCallback }),
        timeout: 30,
      }),
    );
    await recordProviderCall(this.db, orgId, { provider: TWILIO_PROVIDER, providerCallId: c.sid, reference: call.idempotencyKey, from: call.from, to: call.to });
    return waitForCallEnd(this.db, orgId, TWILIO_PROVIDER, c.sid);
  }

  async findCall(orgId: string, q: CallQuery): Promise<Lookup<DialResult>> {
    let c = await findProviderCallByReference(this.db, orgId, TWILIO_PROVIDER, q.reference);
    if (!c) {
      await logProviderRequest(this.db, orgId, TWILIO_PROVIDER, 'findCall', { ...q });
      const [listed] = await this.call(() => this.client.calls.list({ from: q.from, to: q.to, startTimeAfter: new Date(q.sinceMs), limit: 1 }));
      if (!listed) return { absent: true };
      await recordProviderCall(this.db, orgId, { provider: TWILIO_PROVIDER, providerCallId: listed.sid, reference: q.reference, from: q.from, to: q.to });
      if (TWILIO_ENDED.has(listed.status)) {
        // Ended before we looked: its webhooks are spent, the listed call says how it went.
        const seconds = Number(listed.duration ?? 0);
        const outcome = endedCallOutcome(listed.status === 'completed' && seconds === 0 ? 'no-answer' : listed.status, listed.answeredBy ?? null);
        const durationSeconds = outcome === 'answered' || outcome === 'voicemail' ? seconds : 0;
        await updateProviderCall(this.db, TWILIO_PROVIDER, listed.sid, { status: 'ended', outcome, durationSeconds });
        return { found: { providerCallId: listed.sid, outcome, durationSeconds, dialedNow: false, voicemailMessage: await voicemailLeft(this.db, orgId, TWILIO_PROVIDER, listed.sid) } };
      }
      c = await findProviderCallByReference(this.db, orgId, TWILIO_PROVIDER, q.reference);
    }
    const ended = await waitForCallEnd(this.db, orgId, TWILIO_PROVIDER, c!.providerCallId);
    return { found: { ...ended, dialedNow: false } };
  }
}
