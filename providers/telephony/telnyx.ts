/**
 * The Telnyx telephony adapter (TELEPHONY_PROVIDER=telnyx; docs/going-live.md "Telnyx") on the official
 * `telnyx` SDK: number search (`GET /available_phone_numbers`), order (`POST /number_orders`, our number
 * id as `customer_reference`) and release (`DELETE /phone_numbers/{id}`); texts (`POST /messages` on
 * `TELNYX_MESSAGING_PROFILE_ID`, delivery receipts to our webhook with `org` and `ref` in its query);
 * outbound calls (`POST /calls` on the Call Control connection `TELNYX_CONNECTION_ID`, answering-machine
 * detection `detect`, our organization and reference in `client_state`), waited for until their
 * `call.hangup` webhook. A campaign call (or one placed by our `POST /calls`) answered by a person (`call.answered`, then
 * `call.machine.detection.ended` other than a machine) is connected to the campaign's agent with the
 * Call Control command `POST /calls/{id}/actions/conversation_relay_start` (Telnyx "Conversation
 * Relay": started "from TeXML or with a Programmable Voice command"; `command_id` makes a retried
 * command a no-op), its WebSocket the relay of a call stored by the campaign-call handoff (services/voice/handoff.ts), which speaks the
 * agent's greeting first; a call whose agent is no longer published is hung up. A campaign call with a
 * voicemail message to leave is placed with detection `greeting_end`: a machine whose greeting ended
 * (`call.machine.greeting.ended`) hears the message (`speak`), then is hung up on `call.speak.ended`
 * (docs/voice.md "Voicemail"). Look-ups for
 * performOnce: number orders by `customer_reference`; texts by the receipts already stored for our message id (Telnyx lists no messages: otherwise it cannot tell);
 * calls by the reference their webhooks echoed (a call found still up is connected to its agent as the
 * dial would have).
 */
import type Telnyx from 'telnyx';
import type { AvailableNumber } from '../../schemas/types/numbers';
import { ApiError } from '../../domain/errors';
import { areaCodeInfo } from '../../domain/sms/nanp';
import { logProviderRequest } from '../../db/repositories/smsProviderEvents';
import { findProviderCallByReference, providerMessageIdByReference, recordProviderCall, type ProviderCallRecord } from '../../db/repositories/providerWebhooks';
import type { Lookup } from '../lookup';
import type { AnsweredCampaignCall, CallQuery, CampaignCallHandoff, DialResult, OutgoingCall, OutgoingText, TelephonyAdapter, TelephonyDeps } from './index';
import { providerCallbackUrl, requiredEnv, waitForCallEnd } from './live';
import { isTelnyxApiError, TELNYX_PROVIDER, TelnyxAdapterBase, telnyxErrorText } from './telnyxClient';

/** `client_state` of a call: base64 of `{"org":…,"ref":…}` (Telnyx echoes it on every call webhook). */
export function telnyxClientState(orgId: string, reference: string): string {
  return Buffer.from(JSON.stringify({ org: orgId, ref: reference })).toString('base64');
}

/** The organization and reference of a `client_state`, or undefined when it is not ours. */
export function parseTelnyxClientState(state: string | null | undefined): { org: string; ref: string } | undefined {
  if (!state) return undefined;
  try {
    const v = JSON.parse(Buffer.from(state, 'base64').toString('utf8'));
    return typeof v?.org === 'string' && typeof v?.ref === 'string' ? { org: v.org, ref: v.ref } : undefined;
  } catch {
    return undefined;
  }
}

/** Answering-machine verdicts (`call.machine.detection.ended` `result`) that are not a person. */
const TELNYX_MACHINE = /^(machine|fax)/i;

/** US cents of a Telnyx decimal amount in dollars ("1.00" → 100). */
function cents(amount: string | number | undefined): number {
  const n = Number(amount ?? 0);
  return Number.isFinite(n) ? Math.round(n * 100) : 0;
}

/** The Telnyx telephony adapter. */
export class TelnyxTelephony extends TelnyxAdapterBase implements TelephonyAdapter {
  private readonly handoff?: CampaignCallHandoff;

  constructor(deps: TelephonyDeps, client?: Telnyx) {
    super(deps, client);
    this.handoff = deps.handoff;
  }

  async searchNumbers(orgId: string, areaCode: string, limit: number): Promise<AvailableNumber[]> {
    await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, 'searchNumbers', { areaCode, limit });
    const r = await this.call(() =>
      this.client.availablePhoneNumbers.list({ filter: { country_code: 'US', national_destination_code: areaCode, features: ['sms', 'voice'], limit } }),
    );
    const region = areaCodeInfo(areaCode)?.state ?? null;
    return (r.data ?? [])
      .filter((n) => !!n.phone_number)
      .map((n) => {
        const features = new Set((n.features ?? []).map((f) => f.name));
        return {
          e164: n.phone_number!,
          areaCode,
          region: n.region_information?.find((x) => x.region_type === 'state')?.region_name ?? region,
          capabilities: { sms: features.has('sms'), voice: features.has('voice'), mms: features.has('mms') },
          monthlyPriceCents: cents(n.cost_information?.monthly_cost),
        } as AvailableNumber;
      })
      .sort((a, b) => (a.e164 < b.e164 ? -1 : 1));
  }

  /** @throws ApiError 409 `number_unavailable` when Telnyx no longer offers the number */
  async purchaseNumber(orgId: string, e164: string, reference?: string): Promise<{ providerNumberId: string }> {
    await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, 'purchaseNumber', { e164, reference });
    try {
      const r = await this.call(() =>
        this.client.numberOrders.create({
          phone_numbers: [{ phone_number: e164 }],
          customer_reference: reference,
          messaging_profile_id: process.env.TELNYX_MESSAGING_PROFILE_ID || undefined,
          connection_id: process.env.TELNYX_CONNECTION_ID || undefined,
        }),
      );
      const n = r.data?.phone_numbers?.[0];
      if (!n?.id) throw new Error('Telnyx answered the number order without a phone number id');
      return { providerNumberId: n.id };
    } catch (err) {
      if (isTelnyxApiError(err) && (err.status === 409 || err.status === 422)) {
        throw new ApiError(409, 'number_unavailable', `${e164} is no longer available at Telnyx (${telnyxErrorText(err)})`);
      }
      throw err;
    }
  }

  /** Releases a number (`DELETE /phone_numbers/{id}`). */
  async releaseNumber(orgId: string, providerNumberId: string): Promise<void> {
    await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, 'releaseNumber', { providerNumberId });
    await this.call(() => this.client.phoneNumbers.delete(providerNumberId));
  }

  async findNumberOrder(orgId: string, reference: string): Promise<Lookup<{ providerNumberId: string }>> {
    await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, 'findNumberOrder', { reference });
    const page = await this.call(() => this.client.numberOrders.list({ filter: { customer_reference: reference } }));
    const id = page.data?.[0]?.phone_numbers?.[0]?.id;
    return id ? { found: { providerNumberId: id } } : { absent: true };
  }

  async sendMessage(orgId: string, text: OutgoingText): Promise<{ providerMessageId: string; status: 'SENT' }> {
    const profile = requiredEnv('TELNYX_MESSAGING_PROFILE_ID', 'texts through Telnyx');
    await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, 'sendMessage', { from: text.from, to: text.to, reference: text.reference, length: text.body.length });
    const r = await this.call(() =>
      this.client.messages.send({
        from: text.from,
        to: text.to,
        text: text.body,
        messaging_profile_id: profile,
        webhook_url: providerCallbackUrl(this.config, TELNYX_PROVIDER, { org: orgId, ref: text.reference }),
      }),
    );
    if (!r.data?.id) throw new Error('Telnyx answered the message without an id');
    return { providerMessageId: r.data.id, status: 'SENT' };
  }

  async findMessage(orgId: string, reference: string): Promise<Lookup<{ providerMessageId: string; status: 'SENT' }>> {
    const id = await providerMessageIdByReference(this.db, orgId, TELNYX_PROVIDER, reference);
    return id ? { found: { providerMessageId: id, status: 'SENT' } } : { cannotTell: 'Telnyx lists no messages by client reference and no receipt of this text has arrived' };
  }

  async dial(orgId: string, call: OutgoingCall): Promise<DialResult> {
    const connection = requiredEnv('TELNYX_CONNECTION_ID', 'calls through Telnyx');
    await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, 'dial', { from: call.from, to: call.to, reference: call.idempotencyKey });
    const r = await this.call(() =>
      this.client.calls.dial({
        connection_id: connection,
        from: call.from,
        to: call.to,
        // A voicemail message to leave: detection that also reports the end of a machine's greeting (a beep
        // or the silence after it: `call.machine.greeting.ended`), when the message is spoken (docs/voice.md "Voicemail").
        answering_machine_detection: call.campaignId && call.voicemailMessage ? 'greeting_end' : 'detect',
        client_state: telnyxClientState(orgId, call.idempotencyKey),
        webhook_url: providerCallbackUrl(this.config, TELNYX_PROVIDER),
        timeout_secs: 30,
      }),
    );
    const id = r.data?.call_control_id;
    if (!id) throw new Error('Telnyx answered the dial without a call_control_id');
    await recordProviderCall(this.db, orgId, { provider: TELNYX_PROVIDER, providerCallId: id, reference: call.idempotencyKey, from: call.from, to: call.to });
    return waitForCallEnd(this.db, orgId, TELNYX_PROVIDER, id, undefined, this.connectOnceAnswered(orgId, call));
  }

  /**
   * The progress hook of a dial's wait: connects its answered campaign call to the agent, once; or, for a
   * machine when the dial brings a voicemail message, speaks the message once the greeting ended and hangs
   * up once it has been spoken (docs/voice.md "Voicemail").
   */
  private connectOnceAnswered(orgId: string, call: OutgoingCall): (c: ProviderCallRecord) => Promise<void> {
    let connected = false;
    let spoken = false;
    let hungUp = false;
    return async (c) => {
      if (call.campaignId && call.voicemailMessage && TELNYX_MACHINE.test(c.answeredBy ?? '')) {
        if (c.greetingEnded && !spoken) {
          spoken = true;
          await this.speakVoicemail(orgId, call, c);
        }
        if (c.speakEnded && !hungUp) {
          hungUp = true;
          await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, 'hangup', { providerCallId: c.providerCallId, reference: call.idempotencyKey });
          await this.command(orgId, c, 'hangup', () => this.client.calls.actions.hangup(c.providerCallId, { command_id: `voicemail-hangup:${call.idempotencyKey}` }));
        }
        return;
      }
      // A campaign dial or a call placed by POST /calls is connected to its agent; other dials are outcomes only.
      if (connected || !(call.campaignId || call.callId) || c.status !== 'answered' || !c.answeredBy) return;
      connected = true;
      await this.connectToAgent(orgId, call, c);
    };
  }

  /**
   * Leaves the campaign's voicemail message on a machine whose greeting ended: the call and its
   * conversation are stored first (services/voice/voicemail.ts), then the Call Control command `speak`
   * (`command_id` per dial, so a retried dial's repeat is ignored by Telnyx); the hang-up follows its
   * `call.speak.ended`.
   */
  private async speakVoicemail(orgId: string, call: OutgoingCall, c: ProviderCallRecord): Promise<void> {
    const vm = await this.handoff?.leaveVoicemail(this.answered(orgId, call, c));
    if (!vm) return;
    await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, 'speak', { providerCallId: c.providerCallId, reference: call.idempotencyKey, length: vm.message.length });
    await this.command(orgId, c, 'speak', () =>
      this.client.calls.actions.speak(c.providerCallId, {
        payload: vm.message,
        voice: 'female',
        language: vm.language as Telnyx.Calls.ActionSpeakParams['language'],
        command_id: `voicemail:${call.idempotencyKey}`,
      }),
    );
  }

  /** The answered call of a dial (a campaign's, or one placed by POST /calls), as the handoff takes it. */
  private answered(orgId: string, call: OutgoingCall, c: ProviderCallRecord): AnsweredCampaignCall {
    return { orgId, agentId: call.agentId, campaignId: call.campaignId ?? null, ...(call.callId ? { callId: call.callId } : {}), providerCallId: c.providerCallId, provider: TELNYX_PROVIDER, from: call.from, to: call.to };
  }

  /**
   * Sends a Call Control command. Refused (the callee hung up meanwhile: Telnyx's 422 "call has already
   * ended"): the dial still follows the call to its end by its webhooks; the refusal stays in the request log.
   */
  private async command(orgId: string, c: ProviderCallRecord, name: string, send: () => Promise<unknown>): Promise<void> {
    try {
      await this.call(send);
    } catch (err) {
      if (!isTelnyxApiError(err)) throw err;
      await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, `${name} refused`, { providerCallId: c.providerCallId, status: err.status, error: telnyxErrorText(err) });
    }
  }

  /**
   * Hands an answered campaign call (a person, by answering-machine detection) to its agent: the call
   * is stored by the handoff and Telnyx is told to start the ConversationRelay on it
   * (`conversation_relay_start`, `command_id` per dial so a repeated command is ignored). A machine is
   * left to the voicemail outcome; an agent no longer published hangs the call up.
   */
  private async connectToAgent(orgId: string, call: OutgoingCall, c: ProviderCallRecord): Promise<void> {
    if (TELNYX_MACHINE.test(c.answeredBy ?? '')) return;
    const prepared = this.handoff ? await this.handoff.connect(this.answered(orgId, call, c)) : null;
    await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, prepared ? 'startConversationRelay' : 'hangup', { providerCallId: c.providerCallId, reference: call.idempotencyKey, ...(this.handoff ? {} : { reason: 'no_handoff' }) });
    if (!prepared) {
      await this.call(() => this.client.calls.actions.hangup(c.providerCallId, { command_id: `hangup:${call.idempotencyKey}` }));
      return;
    }
    await this.command(orgId, c, 'startConversationRelay', () =>
      this.client.calls.actions.startConversationRelay(c.providerCallId, {
        url: prepared.relayUrl,
        language: prepared.language,
        ...(prepared.voice ? { voice: prepared.voice } : {}),
        transcription_engine: 'Deepgram',
        dtmf_detection: prepared.dtmfEnabled,
        interruptible: 'any',
        custom_parameters: { callId: prepared.callId },
        command_id: `relay:${call.idempotencyKey}`,
      }),
    );
  }

  /**
   * Transfers a Call Control call to an escalation destination (`POST /calls/{id}/actions/transfer`,
   * `command_id` per call so a repeated command is ignored). A call that ended meanwhile (422) is logged,
   * not thrown: there is nobody left to transfer.
   */
  async transferCall(orgId: string, providerCallId: string, to: string, reference: string): Promise<void> {
    await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, 'transfer', { providerCallId, reference });
    try {
      await this.call(() => this.client.calls.actions.transfer(providerCallId, { to, command_id: `transfer:${reference}` }));
    } catch (err) {
      if (!isTelnyxApiError(err)) throw err;
      await logProviderRequest(this.db, orgId, TELNYX_PROVIDER, 'transfer refused', { providerCallId, status: err.status, error: telnyxErrorText(err) });
    }
  }

  async findCall(orgId: string, q: CallQuery): Promise<Lookup<DialResult>> {
    const c = await findProviderCallByReference(this.db, orgId, TELNYX_PROVIDER, q.reference);
    if (!c) return { cannotTell: 'Telnyx lists no ended calls by client_state and no webhook of this call has arrived' };
    // A retried dial whose call is still up connects it as the dial would have (the command's command_id makes a repeat a no-op).
    const dial: OutgoingCall = { from: q.from, to: q.to, idempotencyKey: q.reference, agentId: q.agentId ?? '', campaignId: q.agentId ? q.campaignId : undefined, callId: q.agentId ? q.callId : undefined, voicemailMessage: q.voicemailMessage };
    const ended = await waitForCallEnd(this.db, orgId, TELNYX_PROVIDER, c.providerCallId, undefined, this.connectOnceAnswered(orgId, dial));
    return { found: { ...ended, dialedNow: false } };
  }
}
