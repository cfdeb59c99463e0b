/**
 * A loopback Telnyx (API v2) for the adapters' tests: the paths the `telnyx` SDK calls, Bearer auth
 * checked on every request, every request body and response validated against the SDK's declared
 * shapes (test/providers/telnyxShapes.ts), and webhooks signed as Telnyx signs them: Ed25519 over
 * `{telnyx-timestamp}|{body}`, headers `telnyx-signature-ed25519` (base64) and `telnyx-timestamp`.
 *
 * It behaves like Telnyx for the scenario: brands are verified and campaigns accepted then provisioned
 * by webhooks (a display name containing "Reject Brand" is rejected with a reason); texts are `sent`
 * then `delivered`; calls ring, are answered by a human (answering-machine detection) and hang up
 * after 42 s. With `relayCalls` set, an answered call waits for the Call Control command
 * `conversation_relay_start` and, playing Telnyx's ConversationRelay, opens its WebSocket, sends the
 * `setup` frame, hears the agent's first words, says `relayCallee` lines and hangs up (then
 * `call.conversation.ended` and `call.hangup`); `actions/hangup` ends a call at once. With
 * `machineAnswers` set, calls are answered by a machine (`call.machine.detection.ended` `machine`); a dial
 * asking for `greeting_end` or `detect_beep` detection then gets `call.machine.greeting.ended`
 * (`beep_detected`) and the machine records until hung up: `actions/speak` is recorded in `spoken`
 * (`call.speak.started`, `call.speak.ended` follow). Numbers in `taken` are refused as Telnyx refuses an order of a number no longer there.
 */
import crypto from 'node:crypto';
import { StubServer, type StubAnswer, type StubRequest } from './stubServer';
import { telnyxShapeErrors } from './wire';
import { RelayClient } from '../../providers/telephony/sandboxCaller';

/** A ConversationRelay session the stub played: the command's body and what the agent said. */
export interface StubRelaySession {
  callControlId: string;
  command: any;
  /** Every reply of the agent, in order (the first is its greeting). */
  heard: string[];
  error?: string;
}

/** A fresh Ed25519 key pair: the public key as Telnyx shows it (base64 of the 32 raw bytes). */
export function telnyxTestKeys(): { publicKey: string; privateKey: crypto.KeyObject } {
  const { publicKey, privateKey } = crypto.generateKeyPairSync('ed25519');
  const raw = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32);
  return { publicKey: raw.toString('base64'), privateKey };
}

/** Headers of a Telnyx webhook signed with `privateKey` at `timestamp` (Unix seconds). */
export function telnyxSignature(privateKey: crypto.KeyObject, body: string, timestamp = Math.floor(Date.now() / 1000)): Record<string, string> {
  const signature = crypto.sign(null, Buffer.from(`${timestamp}|${body}`), privateKey).toString('base64');
  return { 'content-type': 'application/json', 'telnyx-signature-ed25519': signature, 'telnyx-timestamp': String(timestamp) };
}

const now = () => new Date().toISOString();
const uuid = () => crypto.randomUUID();

/** The loopback Telnyx. */
export class TelnyxStub extends StubServer {
  readonly keys = telnyxTestKeys();
  readonly taken = new Set<string>();
  readonly brands = new Map<string, any>();
  readonly campaigns = new Map<string, any>();
  readonly orders: any[] = [];
  readonly messages: any[] = [];
  readonly calls: any[] = [];
  readonly assignments: any[] = [];
  readonly relays: StubRelaySession[] = [];
  /** Answered calls wait for `conversation_relay_start` before hanging up (else they hang up at once). */
  relayCalls = false;
  /** The callee hangs up as the relay command arrives: Telnyx refuses it (422 "Call has already ended"). */
  relayTooLate = false;
  /** Calls are answered by an answering machine (docs/voice.md "Voicemail"). */
  machineAnswers = false;
  /** `speak` commands received (one per command_id per call): what a machine recorded, in order. */
  readonly spoken: { callControlId: string; command: any }[] = [];
  /** `actions/transfer` commands, in order (a repeated `command_id` on one call is ignored, as Telnyx does). */
  readonly transfers: { callControlId: string; command: any }[] = [];
  /** What the callee says on the relay, line by line, before hanging up. */
  relayCallee = ['Hello, who is this?'];
  /** Hang-ups held until the relay session of the call ends, by call_control_id. */
  private readonly held = new Map<string, () => void>();

  constructor(readonly apiKey: string) {
    super();
  }

  /** The SDK's base URL for this stub (`TELNYX_BASE_URL`). */
  get apiBase(): string {
    return `${this.baseUrl}/v2`;
  }

  /** POSTs a signed event to `url` (after earlier deliveries); its shape is validated first. */
  webhook(url: string, shape: string | null, payload: unknown, timestamp?: number): void {
    const body = JSON.stringify(payload);
    if (shape) void telnyxShapeErrors(shape, payload).then((e) => this.problem(`webhook ${shape}`, e));
    this.deliver(url, body, () => telnyxSignature(this.keys.privateKey, body, timestamp));
  }

  /** An inbound text from `from` to our number `to`, delivered to `url` as `message.received`. */
  inbound(url: string, from: string, to: string, text: string): void {
    const id = uuid();
    this.webhook(url, 'InboundMessageWebhookEvent', {
      data: {
        event_type: 'message.received',
        id: uuid(),
        occurred_at: now(),
        record_type: 'event',
        payload: { id, record_type: 'message', direction: 'inbound', type: 'SMS', text, from: { phone_number: from }, to: [{ phone_number: to, status: 'webhook_delivered' }], received_at: now() },
      },
    });
  }

  private async body(req: StubRequest, shape: string): Promise<any> {
    const b = req.raw ? JSON.parse(req.raw) : {};
    this.problem(req, await telnyxShapeErrors(shape, b));
    return b;
  }

  private async answer(req: StubRequest, shape: string | null, status: number, body: unknown): Promise<StubAnswer> {
    if (shape) this.problem(`${req.method} ${req.path} response`, await telnyxShapeErrors(shape, body));
    return { status, body };
  }

  private error(status: number, code: string, title: string, detail: string): StubAnswer {
    return { status, body: { errors: [{ code, title, detail }] } };
  }

  /**
   * Plays Telnyx's side of a ConversationRelay session: opens the command's WebSocket, sends `setup`,
   * hears the agent first, says the callee's lines, hangs up; then the call's webhooks end it.
   */
  private async playRelay(session: StubRelaySession, call: any): Promise<void> {
    const url = session.command.url ?? session.command.conversation_relay_url;
    try {
      const client = await RelayClient.open(url);
      client.send({ type: 'setup', sessionId: uuid(), callSid: call.call_control_id, from: call.from, to: call.to, direction: 'outbound-api', callStatus: 'in-progress', customParameters: session.command.custom_parameters ?? {} });
      session.heard.push((await client.reply()).text);
      for (const line of this.relayCallee) {
        if (client.closed || client.end) break;
        client.send({ type: 'prompt', voicePrompt: line, lang: session.command.language ?? 'en-US', last: true });
        session.heard.push((await client.reply()).text);
      }
      client.hangUp();
      await client.closedWith();
    } catch (err) {
      session.error = String(err);
    }
    if (call.webhook_url) {
      this.webhook(call.webhook_url, null, {
        data: { event_type: 'call.conversation.ended', id: uuid(), occurred_at: now(), record_type: 'event', payload: { call_control_id: call.call_control_id, call_leg_id: call.call_leg_id, call_session_id: call.call_session_id, connection_id: call.connection_id, client_state: call.client_state, reason: 'customer_disconnect' } },
      });
    }
    this.held.get(call.call_control_id)?.();
  }

  protected async handle(req: StubRequest): Promise<StubAnswer> {
    if (req.headers.authorization !== `Bearer ${this.apiKey}`) {
      if (req.headers.authorization !== 'Bearer wrong-key') this.problem(req, `authorization ${req.headers.authorization ?? '(none)'}`);
      return this.error(401, '10009', 'Authentication failed', 'The API key is invalid');
    }
    if (req.method !== 'GET' && req.method !== 'DELETE' && !/^application\/json/.test(String(req.headers['content-type']))) this.problem(req, `content-type ${req.headers['content-type']}`);
    const p = req.path.replace(/^\/v2/, '');
    const route = `${req.method} ${p}`;
    let m: RegExpMatchArray | null;

    if (route === 'GET /balance') return this.answer(req, 'BalanceRetrieveResponse', 200, { data: { balance: '300.00', credit_limit: '100.00', available_credit: '400.00', currency: 'USD', record_type: 'balance' } });

    if (route === 'POST /10dlc/brand') {
      const b = await this.body(req, 'BrandCreateParams');
      const brand = { ...b, brandId: `4b20${uuid().slice(0, 8)}`, brandRelationship: 'BASIC_ACCOUNT', status: 'REGISTRATION_PENDING', createdAt: now(), updatedAt: now() };
      this.brands.set(brand.brandId, brand);
      const reject = /reject brand/i.test(`${b.displayName} ${b.companyName ?? ''}`);
      setTimeout(() => {
        Object.assign(brand, reject ? { status: 'REGISTRATION_FAILED', failureReasons: 'Tax ID does not match the legal company name' } : { status: 'OK', identityStatus: 'VERIFIED' });
        brand.updatedAt = now();
        if (b.webhookURL) this.webhook(b.webhookURL, 'CampaignStatusUpdate', reject ? { brandId: brand.brandId, type: 'REGISTRATION', status: 'REJECTED', description: brand.failureReasons } : { brandId: brand.brandId, type: 'REGISTRATION', status: 'ACCEPTED', description: 'Brand verified' });
      }, 10);
      return this.answer(req, 'TelnyxBrand', 200, brand);
    }
    if ((m = /^PUT \/10dlc\/brand\/([^/]+)$/.exec(route))) {
      const b = await this.body(req, 'BrandUpdateParams');
      const brand = this.brands.get(m[1]);
      if (!brand) return this.error(404, '10005', 'Resource not found', 'No such brand');
      Object.assign(brand, b, { status: 'OK', identityStatus: 'VERIFIED', failureReasons: undefined, updatedAt: now() });
      if (b.webhookURL) this.webhook(b.webhookURL, 'CampaignStatusUpdate', { brandId: brand.brandId, type: 'REGISTRATION', status: 'ACCEPTED', description: 'Brand verified' });
      return this.answer(req, 'TelnyxBrand', 200, brand);
    }
    if ((m = /^GET \/10dlc\/brand\/([^/]+)$/.exec(route))) {
      const brand = this.brands.get(m[1]);
      return brand ? this.answer(req, 'BrandRetrieveResponse', 200, { ...brand, assignedCampaignsCount: 0 }) : this.error(404, '10005', 'Resource not found', 'No such brand');
    }
    if (route === 'GET /10dlc/brand') {
      const name = req.query.get('displayName');
      const page = Number(req.query.get('page') ?? 1);
      const records = page > 1 ? [] : [...this.brands.values()].filter((b) => !name || b.displayName === name).map((b) => ({ brandId: b.brandId, displayName: b.displayName, status: b.status, createdAt: b.createdAt, entityType: b.entityType }));
      return this.answer(req, null, 200, { records, page, totalRecords: records.length });
    }
    if (route === 'POST /10dlc/campaignBuilder') {
      const b = await this.body(req, 'CampaignBuilderSubmitParams');
      const brand = this.brands.get(b.brandId);
      if (!brand) return this.error(400, '10015', 'Bad request', 'Unknown brandId');
      const c = {
        ...b,
        campaignId: `4b30${uuid().slice(0, 8)}`,
        cspId: 'CSPSTUB',
        mock: false,
        subUsecases: [],
        termsAndConditions: true,
        campaignStatus: 'TCR_PENDING',
        createDate: now(),
      };
      this.campaigns.set(c.campaignId, c);
      setTimeout(() => {
        c.campaignStatus = 'TELNYX_ACCEPTED';
        if (b.webhookURL) this.webhook(b.webhookURL, 'CampaignStatusUpdate', { brandId: b.brandId, campaignId: c.campaignId, type: 'TELNYX_REVIEW', status: 'ACCEPTED', description: 'Campaign accepted' });
        setTimeout(() => {
          c.campaignStatus = 'MNO_PROVISIONED';
          if (b.webhookURL) this.webhook(b.webhookURL, 'CampaignStatusUpdate', { brandId: b.brandId, campaignId: c.campaignId, type: 'MNO_REVIEW', status: 'ACCEPTED', description: 'Provisioned at the carriers' });
        }, 10);
      }, 10);
      return this.answer(req, 'TelnyxCampaignCsp', 200, c);
    }
    if ((m = /^GET \/10dlc\/campaign\/([^/]+)$/.exec(route))) {
      const c = this.campaigns.get(m[1]);
      return c ? this.answer(req, 'TelnyxCampaignCsp', 200, c) : this.error(404, '10005', 'Resource not found', 'No such campaign');
    }
    if (route === 'GET /10dlc/campaign') {
      const brandId = req.query.get('brandId');
      if (!brandId) this.problem(req, 'brandId is required');
      const page = Number(req.query.get('page') ?? 1);
      const records = page > 1 ? [] : [...this.campaigns.values()].filter((c) => c.brandId === brandId);
      return this.answer(req, null, 200, { records, page, totalRecords: records.length });
    }
    if (route === 'POST /10dlc/phone_number_campaigns') {
      const b = await this.body(req, 'PhoneNumberCampaignCreateParams');
      if (!this.campaigns.has(b.campaignId)) return this.error(400, '10015', 'Bad request', 'Unknown campaignId');
      this.assignments.push(b);
      return this.answer(req, null, 200, { phoneNumber: b.phoneNumber, campaignId: b.campaignId, createdAt: now(), updatedAt: now() });
    }
    if (route === 'GET /available_phone_numbers') {
      const ndc = req.query.get('filter[national_destination_code]');
      const limit = Number(req.query.get('filter[limit]') ?? 10);
      if (req.query.get('filter[country_code]') !== 'US' || !ndc) this.problem(req, `filters ${req.query.toString()}`);
      const data = Array.from({ length: Math.min(limit, 5) }, (_, i) => ({
        record_type: 'available_phone_number',
        phone_number: `+1${ndc}2${String(230000 + i)}`,
        vanity_format: '',
        best_effort: false,
        quickship: true,
        reservable: true,
        region_information: [{ region_type: 'state', region_name: 'IL' }],
        cost_information: { upfront_cost: '1.00', monthly_cost: '1.00', currency: 'USD' },
        features: [{ name: 'sms' }, { name: 'voice' }, { name: 'mms' }],
      })).filter((n) => !this.taken.has(n.phone_number));
      return this.answer(req, 'AvailablePhoneNumberListResponse', 200, { data, meta: { total_results: data.length, best_effort_results: 0 } });
    }
    if (route === 'POST /number_orders') {
      const b = await this.body(req, 'NumberOrderCreateParams');
      const e164 = b.phone_numbers?.[0]?.phone_number;
      if (this.taken.has(e164)) return this.error(422, '85001', 'Number not available', `${e164} is no longer available`);
      this.taken.add(e164);
      const order = {
        id: uuid(),
        record_type: 'number_order',
        status: 'success',
        customer_reference: b.customer_reference,
        messaging_profile_id: b.messaging_profile_id,
        connection_id: b.connection_id,
        phone_numbers_count: 1,
        requirements_met: true,
        created_at: now(),
        updated_at: now(),
        phone_numbers: [{ id: uuid(), record_type: 'number_order_phone_number', phone_number: e164, status: 'success', requirements_met: true, country_code: 'US', phone_number_type: 'local' }],
      };
      this.orders.push(order);
      return this.answer(req, 'NumberOrderCreateResponse', 200, { data: order });
    }
    if (route === 'GET /number_orders') {
      const ref = req.query.get('filter[customer_reference]');
      const data = this.orders.filter((o) => o.customer_reference === ref);
      return this.answer(req, null, 200, { data, meta: { page_number: 1, page_size: 20, total_pages: 1, total_results: data.length } });
    }
    if ((m = /^DELETE \/phone_numbers\/([^/]+)$/.exec(route))) {
      const order = this.orders.find((o) => o.phone_numbers[0].id === m![1]);
      if (!order) return this.error(404, '10005', 'Resource not found', 'No such number');
      this.taken.delete(order.phone_numbers[0].phone_number);
      return this.answer(req, null, 200, { data: { id: m[1], phone_number: order.phone_numbers[0].phone_number, status: 'deleted', record_type: 'phone_number' } });
    }
    if (route === 'POST /messages') {
      const b = await this.body(req, 'MessageSendParams');
      const msg = { id: uuid(), record_type: 'message', direction: 'outbound', type: 'SMS', text: b.text, from: { phone_number: b.from }, to: [{ phone_number: b.to, status: 'queued' }], messaging_profile_id: b.messaging_profile_id, webhook_url: b.webhook_url, parts: 1, encoding: 'GSM-7', sent_at: null, completed_at: null, errors: [] };
      this.messages.push(msg);
      const event = (type: string, status: string) => ({ data: { event_type: type, id: uuid(), occurred_at: now(), record_type: 'event', payload: { ...msg, to: [{ phone_number: b.to, status }] } } });
      if (b.webhook_url) {
        this.webhook(b.webhook_url, 'DeliveryUpdateWebhookEvent', event('message.sent', 'sent'));
        this.webhook(b.webhook_url, 'DeliveryUpdateWebhookEvent', event('message.finalized', /fail delivery/i.test(b.text ?? '') ? 'delivery_failed' : 'delivered'));
      }
      return this.answer(req, 'MessageSendResponse', 200, { data: msg });
    }
    if (route === 'POST /calls') {
      const b = await this.body(req, 'CallDialParams');
      const ids = { call_control_id: `v3:${uuid()}`, call_leg_id: uuid(), call_session_id: uuid() };
      this.calls.push({ ...b, ...ids });
      const common = { ...ids, connection_id: b.connection_id, client_state: b.client_state, from: b.from, to: b.to };
      const start = new Date();
      const end = new Date(start.getTime() + 42_000);
      const ev = (type: string, shape: string, payload: Record<string, unknown>, at = now()) => this.webhook(b.webhook_url, shape, { data: { event_type: type, id: uuid(), occurred_at: at, record_type: 'event', payload: { ...common, ...payload } } });
      if (b.webhook_url) {
        ev('call.initiated', 'CallInitiatedWebhookEvent', { direction: 'outgoing', state: 'bridging' });
        ev('call.answered', 'CallAnsweredWebhookEvent', { start_time: start.toISOString() });
        ev('call.machine.detection.ended', 'CallMachineDetectionEndedWebhookEvent', { result: this.machineAnswers ? 'machine' : 'human' });
        // A machine asked to be followed to its beep: the greeting ends, then it records until hung up.
        const recording = this.machineAnswers && ['greeting_end', 'detect_beep', 'detect_words'].includes(b.answering_machine_detection);
        if (recording) ev('call.machine.greeting.ended', 'CallMachineGreetingEndedWebhookEvent', { result: 'beep_detected' });
        const holds = recording || (this.relayCalls && !this.machineAnswers);
        const hangup = () => {
          if (!this.held.delete(ids.call_control_id) && holds) return;
          ev('call.hangup', 'CallHangupWebhookEvent', { hangup_cause: 'normal_clearing', hangup_source: recording ? 'caller' : 'callee', start_time: start.toISOString(), state: 'hangup' }, end.toISOString());
        };
        if (holds) this.held.set(ids.call_control_id, hangup);
        else hangup();
      }
      return this.answer(req, 'CallDialResponse', 200, { data: { ...ids, is_alive: false, record_type: 'call' } });
    }
    if ((m = /^POST \/calls\/([^/]+)\/actions\/conversation_relay_start$/.exec(route))) {
      const b = await this.body(req, 'ActionStartConversationRelayParams');
      const id = decodeURIComponent(m[1]);
      const call = this.calls.find((c) => c.call_control_id === id);
      if (!call) return this.error(404, '90018', 'Call has already ended', 'No such call');
      if (this.relayTooLate) {
        this.held.get(id)?.();
        return this.error(422, '90018', 'Call has already ended', 'This call is no longer active and can\'t receive commands.');
      }
      const session: StubRelaySession = { callControlId: id, command: b, heard: [] };
      if (!this.relays.some((r) => r.callControlId === id && r.command.command_id && r.command.command_id === b.command_id)) {
        this.relays.push(session);
        void this.playRelay(session, call);
      }
      return this.answer(req, 'ActionStartConversationRelayResponse', 200, { data: { result: 'ok', conversation_relay_id: uuid() } });
    }
    if ((m = /^POST \/calls\/([^/]+)\/actions\/speak$/.exec(route))) {
      const b = await this.body(req, 'ActionSpeakParams');
      const id = decodeURIComponent(m[1]);
      const call = this.calls.find((c) => c.call_control_id === id);
      if (!call || !this.held.has(id)) return this.error(422, '90018', 'Call has already ended', 'This call is no longer active and can\'t receive commands.');
      // Telnyx ignores a command whose command_id it has seen on this call.
      if (!this.spoken.some((x) => x.callControlId === id && b.command_id && x.command.command_id === b.command_id)) {
        this.spoken.push({ callControlId: id, command: b });
        const payload = { call_control_id: id, call_leg_id: call.call_leg_id, call_session_id: call.call_session_id, connection_id: call.connection_id, client_state: call.client_state };
        this.webhook(call.webhook_url, 'CallSpeakStartedWebhookEvent', { data: { event_type: 'call.speak.started', id: uuid(), occurred_at: now(), record_type: 'event', payload } });
        this.webhook(call.webhook_url, 'CallSpeakEndedWebhookEvent', { data: { event_type: 'call.speak.ended', id: uuid(), occurred_at: now(), record_type: 'event', payload: { ...payload, status: 'completed' } } });
      }
      return this.answer(req, 'ActionSpeakResponse', 200, { data: { result: 'ok' } });
    }
    if ((m = /^POST \/calls\/([^/]+)\/actions\/transfer$/.exec(route))) {
      const b = await this.body(req, 'ActionTransferParams');
      const id = decodeURIComponent(m[1]);
      if (!this.calls.some((c) => c.call_control_id === id)) return this.error(422, '90018', 'Call has already ended', 'This call is no longer active and can\'t receive commands.');
      if (!this.transfers.some((x) => x.callControlId === id && b.command_id && x.command.command_id === b.command_id)) this.transfers.push({ callControlId: id, command: b });
      return this.answer(req, 'ActionTransferResponse', 200, { data: { result: 'ok' } });
    }
    if ((m = /^POST \/calls\/([^/]+)\/actions\/hangup$/.exec(route))) {
      await this.body(req, 'ActionHangupParams');
      this.held.get(decodeURIComponent(m[1]))?.();
      return this.answer(req, 'ActionHangupResponse', 200, { data: { result: 'ok' } });
    }
    this.problem(req, 'no such Telnyx operation in the stub');
    return this.error(404, '10005', 'Resource not found', route);
  }
}
