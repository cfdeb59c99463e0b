/**
 * A loopback Twilio (API 2010-04-01) for the adapter's tests: the paths the `twilio` SDK calls, HTTP
 * Basic auth (account SID and auth token) checked on every request, form bodies validated against
 * Twilio's OpenAPI `requestBody` schemas and responses built from the documented examples and validated
 * against the documented response schemas (../shared/providers/twilio-oai/). Webhooks are form POSTs
 * signed as Twilio signs them (`X-Twilio-Signature`, the SDK's getExpectedTwilioSignature over the URL
 * and parameters) with an `I-Twilio-Idempotency-Token`.
 *
 * Behaviour: texts are `sent` then `delivered`; calls are initiated, ring, are answered (their `Url`
 * then requested for the call's instructions, signed likewise) by a human (async AMD callback) and
 * complete after 42 s; a number in `taken` is refused with 21422. With `machineAnswers` set, an answering
 * machine answers: `AnsweredBy` is `machine_start` (`MachineDetection=Enable`) or, with synchronous
 * `DetectMessageEnd`, `machine_end_beep` in the `Url` request made once the greeting ended (Twilio
 * "Answering Machine Detection"); status callbacks of an AMD call carry `AnsweredBy` too.
 */
import crypto from 'node:crypto';
import twilio from 'twilio';
import { StubServer, type StubAnswer, type StubRequest } from './stubServer';
import { requireTwilioDocument, twilioExample, twilioRequestErrors, twilioResponseErrors } from './wire';

const ACCOUNT = '/2010-04-01/Accounts/{AccountSid}';
const rfc2822 = () => new Date().toUTCString().replace('GMT', '+0000');
const sid = (prefix: string) => `${prefix}${crypto.randomBytes(16).toString('hex')}`;

/** The value of attribute `name` in the first `<tag …>` of TwiML, entities decoded. @throws Error when there is none */
export function twimlAttr(markup: string, tag: string, name: string): string {
  const el = new RegExp(`<${tag}\\b[^>]*>`).exec(markup)?.[0] ?? '';
  const v = new RegExp(`\\b${name}="([^"]*)"`).exec(el)?.[1];
  if (v === undefined) throw new Error(`no ${tag}@${name} in ${markup}`);
  return v.replace(/&amp;/g, '&').replace(/&quot;/g, '"');
}

/** The loopback Twilio. */
export class TwilioStub extends StubServer {
  readonly taken = new Set<string>();
  readonly numbers: any[] = [];
  readonly messages: any[] = [];
  readonly calls: any[] = [];
  /** Calls are answered by an answering machine (docs/voice.md "Voicemail"). */
  machineAnswers = false;

  constructor(readonly accountSid: string, readonly authToken: string) {
    super();
  }

  /**
   * Starts listening once Twilio's documents are readable.
   * @throws Error in one line naming the missing file when the provider documents are missing
   */
  override async start(): Promise<this> {
    requireTwilioDocument();
    return super.start();
  }

  /** POSTs a signed form webhook to `url`, as Twilio does. */
  webhook(url: string, params: Record<string, string>): void {
    const body = new URLSearchParams(params).toString();
    this.deliver(url, body, () => ({
      'content-type': 'application/x-www-form-urlencoded',
      'x-twilio-signature': twilio.getExpectedTwilioSignature(this.authToken, url, params),
      'i-twilio-idempotency-token': crypto.randomUUID(),
    }));
  }

  /**
   * Requests `url` now, signed as Twilio signs it, and returns the application's answer (TwiML, or the status of a
   * callback) — the synchronous requests of a call: its voice URL, `<Connect action>`, `<Number url>`, `<Dial action>`.
   */
  async request(url: string, params: Record<string, string>): Promise<{ status: number; text: string }> {
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': twilio.getExpectedTwilioSignature(this.authToken, url, params),
        'i-twilio-idempotency-token': crypto.randomUUID(),
      },
      body: new URLSearchParams(params).toString(),
    });
    return { status: res.status, text: await res.text() };
  }

  /** The parameters of every voice request about a call (Twilio "Twilio's request to your application"). */
  private voiceParams(callSid: string, from: string, to: string, direction: string, callStatus: string): Record<string, string> {
    return { AccountSid: this.accountSid, ApiVersion: '2010-04-01', CallSid: callSid, CallStatus: callStatus, Called: to, Caller: from, Direction: direction, From: from, To: to };
  }

  /** A person calls our number `to`: Twilio requests the number's voice URL. @returns the call's sid and the TwiML answered */
  async incomingCall(voiceUrl: string, from: string, to: string, callSid = sid('CA')): Promise<{ callSid: string; status: number; text: string }> {
    return { callSid, ...(await this.request(voiceUrl, this.voiceParams(callSid, from, to, 'inbound', 'ringing'))) };
  }

  /**
   * The ConversationRelay session of a call ended: Twilio requests the `<Connect action>` URL with the session's
   * outcome and the `handoffData` of the relay's `end` message (Twilio "TwiML Voice: <ConversationRelay>").
   */
  connectAction(actionUrl: string, call: { callSid: string; from: string; to: string }, handoffData: string | null): Promise<{ status: number; text: string }> {
    return this.request(actionUrl, {
      ...this.voiceParams(call.callSid, call.from, call.to, 'inbound', 'in-progress'),
      SessionId: sid('VX'),
      SessionStatus: 'ended',
      SessionDuration: '12',
      ...(handoffData === null ? {} : { HandoffData: handoffData }),
    });
  }

  /**
   * `<Dial><Number url>` answered by the person dialed: Twilio creates a child leg (its own `CallSid`, the call it was
   * dialed from in `ParentCallSid`, direction `outbound-dial`) and requests the `<Number url>` on that leg before the
   * two are bridged (Twilio "TwiML Voice: <Number>").
   */
  async dialedLeg(numberUrl: string, parent: { callSid: string; from: string }, to: string, childSid = sid('CA')): Promise<{ callSid: string; status: number; text: string }> {
    return { callSid: childSid, ...(await this.request(numberUrl, { ...this.voiceParams(childSid, parent.from, to, 'outbound-dial', 'in-progress'), ParentCallSid: parent.callSid })) };
  }

  /** The dialed leg ended: Twilio requests the `<Dial action>` URL on the parent call with `DialCallSid`, `DialCallStatus`, `DialCallDuration`. */
  dialAction(actionUrl: string, call: { callSid: string; from: string; to: string }, child: { callSid: string; status: string; seconds: number }): Promise<{ status: number; text: string }> {
    return this.request(actionUrl, {
      ...this.voiceParams(call.callSid, call.from, call.to, 'inbound', 'in-progress'),
      DialCallSid: child.callSid,
      DialCallStatus: child.status,
      DialCallDuration: String(child.seconds),
      DialBridged: String(child.status === 'completed'),
    });
  }

  /**
   * A status callback of a call (Twilio "Call status callbacks": `CallStatus`, `CallDuration` when completed,
   * `CallbackSource`, `SequenceNumber`, `Timestamp`); `parentCallSid` for a dialed child leg's.
   */
  callStatus(statusUrl: string, call: { callSid: string; from: string; to: string; direction?: string }, status: string, seconds?: number, parentCallSid?: string): Promise<{ status: number; text: string }> {
    return this.request(statusUrl, {
      ...this.voiceParams(call.callSid, call.from, call.to, call.direction ?? 'inbound', status),
      ...(seconds === undefined ? {} : { CallDuration: String(seconds), Duration: String(Math.ceil(seconds / 60)) }),
      ...(parentCallSid ? { ParentCallSid: parentCallSid } : {}),
      CallbackSource: 'call-progress-events',
      SequenceNumber: '0',
      Timestamp: rfc2822(),
    });
  }

  /** An inbound text to our number `to`, POSTed to the number's SmsUrl. */
  inbound(from: string, to: string, text: string): void {
    const n = this.numbers.find((x) => x.phone_number === to);
    if (!n?.sms_url) throw new Error(`no SmsUrl for ${to}`);
    const m = sid('SM');
    this.webhook(n.sms_url, { ToCountry: 'US', SmsMessageSid: m, NumMedia: '0', SmsSid: m, SmsStatus: 'received', Body: text, To: to, MessageSid: m, AccountSid: this.accountSid, From: from, ApiVersion: '2010-04-01' });
  }

  private form(req: StubRequest, template: string): Record<string, string> {
    if (!/^application\/x-www-form-urlencoded/.test(String(req.headers['content-type']))) this.problem(req, `content-type ${req.headers['content-type']}`);
    const params: Record<string, string> = {};
    const multi: Record<string, string | string[]> = {};
    for (const [k, v] of new URLSearchParams(req.raw)) {
      params[k] = v;
      multi[k] = k in multi ? ([] as string[]).concat(multi[k], v) : v;
    }
    this.problem(req, twilioRequestErrors(template, req.method, multi));
    return params;
  }

  private answer(req: StubRequest, template: string, status: number, body: unknown): StubAnswer {
    this.problem(`${req.method} ${req.path} response`, twilioResponseErrors(template, req.method, status, body));
    return { status, body };
  }

  private list(req: StubRequest, template: string, key: string, items: unknown[]): StubAnswer {
    const uri = req.path;
    return this.answer(req, template, 200, { [key]: items, page: 0, page_size: 50, start: 0, end: Math.max(items.length - 1, 0), uri, first_page_uri: uri, next_page_uri: null, previous_page_uri: null });
  }

  protected async handle(req: StubRequest): Promise<StubAnswer> {
    const expected = `Basic ${Buffer.from(`${this.accountSid}:${this.authToken}`).toString('base64')}`;
    if (req.headers.authorization !== expected) {
      return { status: 401, body: { code: 20003, message: 'Authenticate', more_info: 'https://www.twilio.com/docs/errors/20003', status: 401 } };
    }
    const prefix = `/2010-04-01/Accounts/${this.accountSid}`;
    if (!req.path.startsWith(prefix)) {
      this.problem(req, 'not under the account');
      return { status: 404, body: { code: 20404, message: 'Not found', status: 404 } };
    }
    const rest = req.path.slice(prefix.length);
    const route = `${req.method} ${rest}`;
    let m: RegExpMatchArray | null;

    if (route === 'GET .json') {
      const body = { ...twilioExample('/2010-04-01/Accounts/{Sid}.json', 'GET', 200), sid: this.accountSid, status: 'active' };
      return this.answer(req, '/2010-04-01/Accounts/{Sid}.json', 200, body);
    }
    if (route === 'GET /AvailablePhoneNumbers/US/Local.json') {
      const t = `${ACCOUNT}/AvailablePhoneNumbers/{CountryCode}/Local.json`;
      const area = req.query.get('AreaCode');
      const example = twilioExample(t, 'GET', 200);
      const template = example.available_phone_numbers[0];
      const items = Array.from({ length: Math.min(Number(req.query.get('PageSize') ?? 5), 5) }, (_, i) => `+1${area}2${String(230000 + i)}`)
        .filter((e) => !this.taken.has(e))
        .map((e) => ({ ...template, phone_number: e, friendly_name: e, region: 'IL', capabilities: { voice: true, sms: true, mms: true, fax: false } }));
      return this.answer(req, t, 200, { ...example, available_phone_numbers: items, uri: req.path });
    }
    if (route === 'POST /IncomingPhoneNumbers.json') {
      const t = `${ACCOUNT}/IncomingPhoneNumbers.json`;
      const p = this.form(req, t);
      if (this.taken.has(p.PhoneNumber)) return { status: 400, body: { code: 21422, message: 'PhoneNumber requested is not available', more_info: 'https://www.twilio.com/docs/errors/21422', status: 400 } };
      this.taken.add(p.PhoneNumber);
      const n = { ...twilioExample(t, 'POST', 201), sid: sid('PN'), account_sid: this.accountSid, phone_number: p.PhoneNumber, friendly_name: p.FriendlyName ?? p.PhoneNumber, sms_url: p.SmsUrl ?? '', sms_method: p.SmsMethod ?? 'POST', voice_url: p.VoiceUrl ?? null, date_created: rfc2822(), date_updated: rfc2822() };
      this.numbers.push(n);
      return this.answer(req, t, 201, n);
    }
    if (route === 'GET /IncomingPhoneNumbers.json') {
      const name = req.query.get('FriendlyName');
      return this.list(req, `${ACCOUNT}/IncomingPhoneNumbers.json`, 'incoming_phone_numbers', this.numbers.filter((n) => !name || n.friendly_name === name));
    }
    if ((m = /^DELETE \/IncomingPhoneNumbers\/(PN[0-9a-f]{32})\.json$/.exec(route))) {
      const i = this.numbers.findIndex((n) => n.sid === m![1]);
      if (i < 0) return { status: 404, body: { code: 20404, message: 'Not found', status: 404 } };
      this.taken.delete(this.numbers[i].phone_number);
      this.numbers.splice(i, 1);
      return { status: 204 };
    }
    if (route === 'POST /Messages.json') {
      const t = `${ACCOUNT}/Messages.json`;
      const p = this.form(req, t);
      const msg = { ...twilioExample(t, 'POST', 201), sid: sid('SM'), account_sid: this.accountSid, from: p.From, to: p.To, body: p.Body, status: 'queued', messaging_service_sid: null, date_created: rfc2822(), date_sent: rfc2822(), date_updated: rfc2822() };
      this.messages.push(msg);
      if (p.StatusCallback) {
        const base = { AccountSid: this.accountSid, From: p.From, To: p.To, MessageSid: msg.sid, SmsSid: msg.sid, ApiVersion: '2010-04-01' };
        this.webhook(p.StatusCallback, { ...base, MessageStatus: 'sent', SmsStatus: 'sent' });
        const failed = /fail delivery/i.test(p.Body ?? '');
        this.webhook(p.StatusCallback, { ...base, MessageStatus: failed ? 'undelivered' : 'delivered', SmsStatus: failed ? 'undelivered' : 'delivered', ...(failed ? { ErrorCode: '30003' } : {}) });
      }
      return this.answer(req, t, 201, msg);
    }
    if (route === 'GET /Messages.json') {
      const from = req.query.get('From');
      const to = req.query.get('To');
      return this.list(req, `${ACCOUNT}/Messages.json`, 'messages', this.messages.filter((x) => (!from || x.from === from) && (!to || x.to === to)));
    }
    if (route === 'POST /Calls.json') {
      const t = `${ACCOUNT}/Calls.json`;
      const p = this.form(req, t);
      if (!p.Url) this.problem(req, 'a call without Url (the voice webhook)');
      const call = { ...twilioExample(t, 'POST', 201), sid: sid('CA'), account_sid: this.accountSid, from: p.From, to: p.To, status: 'queued', date_created: rfc2822(), date_updated: rfc2822() };
      this.calls.push({ ...call, params: p });
      const base = { AccountSid: this.accountSid, CallSid: call.sid, From: p.From, To: p.To, Direction: 'outbound-api', ApiVersion: '2010-04-01' };
      if (p.StatusCallback) {
        this.webhook(p.StatusCallback, { ...base, CallStatus: 'initiated' });
        this.webhook(p.StatusCallback, { ...base, CallStatus: 'ringing' });
        this.webhook(p.StatusCallback, { ...base, CallStatus: 'in-progress' });
      }
      const answeredBy = !this.machineAnswers ? 'human' : p.MachineDetection === 'DetectMessageEnd' ? 'machine_end_beep' : 'machine_start';
      const amd: Record<string, string> = p.MachineDetection ? { AnsweredBy: answeredBy } : {};
      // Answered: Twilio requests the call's instructions from its Url (the answer is in `deliveries`);
      // with synchronous AMD, once the verdict is known and with it.
      this.webhook(p.Url, { ...base, CallStatus: 'in-progress', ...(p.AsyncAmd === 'true' ? {} : amd) });
      if (p.AsyncAmdStatusCallback) this.webhook(p.AsyncAmdStatusCallback, { AccountSid: this.accountSid, CallSid: call.sid, AnsweredBy: answeredBy, MachineDetectionDuration: '1200' });
      if (p.StatusCallback) this.webhook(p.StatusCallback, { ...base, CallStatus: 'completed', CallDuration: '42', ...amd });
      const answer = this.answer(req, t, 201, call);
      // What a later list shows: the call as it ended.
      Object.assign(this.calls[this.calls.length - 1], { status: 'completed', duration: '42', answered_by: answeredBy, start_time: rfc2822(), end_time: rfc2822() });
      return answer;
    }
    if (route === 'GET /Calls.json') {
      const from = req.query.get('From');
      const to = req.query.get('To');
      return this.list(req, `${ACCOUNT}/Calls.json`, 'calls', this.calls.filter((x) => (!from || x.from === from) && (!to || x.to === to)).map(({ params: _p, ...c }) => c));
    }
    this.problem(req, 'no such Twilio operation in the stub');
    return { status: 404, body: { code: 20404, message: 'Not found', status: 404 } };
  }
}
