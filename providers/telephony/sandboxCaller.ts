/**
 * The sandbox carrier's caller (docs/voice.md): plays the carrier's part of a phone call end to
 * end over the real protocols — it rings the voice webhook (`POST …/voice/sandbox/inbound`, form
 * parameters signed with Twilio's X-Twilio-Signature scheme keyed by CARRIER_CALLBACK_SECRET), reads
 * the markup, opens the ConversationRelay WebSocket it names, sends `setup` and then the script's
 * prompts, keypad digits and barge-ins as the carrier's frames, and records what it heard. Tests, the
 * CLI's `call` command and the benchmark all use it.
 */
import { WebSocket } from 'ws';
import { callbackSecret } from '../../domain/sms/callbackSignature';
import { twilioSignature } from '../../domain/voice/signatures';
import type { RelayFrame } from '../../domain/voice/frames';

/** One step of a caller's script. */
export type CallStep =
  /** Says a sentence (a final `prompt`) and waits for the agent's whole reply. */
  | { say: string }
  /** Presses keys (one `dtmf` frame each) and waits for the agent's reply to the completed input. */
  | { digits: string }
  /** Says nothing and waits for a line the agent speaks on its own (e.g. a caller verification PIN request after the greeting). */
  | { listen: true }
  /** Says a sentence, then barges in once `afterChars` characters of the reply arrived. */
  | { say: string; bargeInAfterChars: number }
  /** Says a sentence and hangs up before the reply is complete. */
  | { say: string; hangUpMidTurn: true };

/** A line of the call as the caller experienced it. */
export interface HeardLine {
  who: 'caller' | 'agent';
  text: string;
}

/** What happened on the call. */
export interface CallRecording {
  /** The carrier's call id the caller made up. */
  callSid: string;
  /** The webhook's HTTP status and markup. */
  webhookStatus: number;
  markup: string;
  /** The refusal spoken instead of a connection (`<Say>`), else null. */
  refusal: string | null;
  lines: HeardLine[];
  /** The `end` frame's `handoffData`, parsed, when the agent ended the call with one. */
  handoff: Record<string, unknown> | null;
  /** True when the agent sent `end`. */
  endedByAgent: boolean;
  /** Close code and reason of the socket, as the caller saw them. */
  close: { code: number; reason: string } | null;
}

/** A sandbox call to place. */
export interface SandboxCall {
  /** The API's base URL, e.g. http://127.0.0.1:8080/api/v1 */
  baseUrl: string;
  from: string;
  to: string;
  script: CallStep[];
  /** Milliseconds to wait for one reply before giving up (default 10,000). */
  replyTimeoutMs?: number;
  /** Carrier call id to use (default a fresh `CAsandbox…`). */
  callSid?: string;
  /**
   * The status callbacks to send as the carrier does (`in-progress` once connected, `completed` with
   * this `CallDuration` after the hang-up); default: the call's real length rounded up to seconds;
   * null sends none.
   */
  durationSeconds?: number | null;
}

const decode = (s: string) => s.replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
const attr = (tag: string, name: string) => {
  const m = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
  return m ? decode(m[1]) : null;
};

/** Posts a signed form to a sandbox voice webhook. @returns status and body text */
export async function postSandboxWebhook(url: string, params: Record<string, string>): Promise<{ status: number; text: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': twilioSignature(callbackSecret('sandbox'), url, params) },
    body: new URLSearchParams(params).toString(),
  });
  return { status: res.status, text: await res.text() };
}

/**
 * Places a sandbox call and plays the script.
 * @throws when the relay does not answer a step within the reply timeout
 */
export async function placeSandboxCall(call: SandboxCall): Promise<CallRecording> {
  const callSid = call.callSid ?? `CAsandbox${Date.now().toString(36)}${Math.random().toString(36).slice(2, 10)}`;
  const hook = await postSandboxWebhook(`${call.baseUrl}/voice/sandbox/inbound`, { CallSid: callSid, From: call.from, To: call.to, CallStatus: 'ringing', Direction: 'inbound' });
  const rec: CallRecording = { callSid, webhookStatus: hook.status, markup: hook.text, refusal: null, lines: [], handoff: null, endedByAgent: false, close: null };
  const say = /<Say[^>]*>([^<]*)<\/Say>/.exec(hook.text);
  const relayTag = /<ConversationRelay\b[^>]*>/.exec(hook.text)?.[0];
  if (hook.status !== 200 || !relayTag) {
    rec.refusal = say ? decode(say[1]) : null;
    return rec;
  }
  const greeting = attr(relayTag, 'welcomeGreeting');
  if (greeting) rec.lines.push({ who: 'agent', text: greeting });
  const startedAt = Date.now();
  const status = (params: Record<string, string>) => postSandboxWebhook(`${call.baseUrl}/voice/sandbox/status`, { CallSid: callSid, From: call.from, To: call.to, ...params });
  if (call.durationSeconds !== null) await status({ CallStatus: 'in-progress' });
  const client = await RelayClient.open(attr(relayTag, 'url')!, call.replyTimeoutMs ?? 10_000);
  client.send({ type: 'setup', sessionId: `VX${callSid}`, callSid, from: call.from, to: call.to, direction: 'inbound', callStatus: 'in-progress', customParameters: {} });
  for (const step of call.script) {
    if (client.closed || client.end) break;
    if ('listen' in step) {
      const line = await client.reply();
      if (line.text) rec.lines.push({ who: 'agent', text: line.text });
      continue;
    }
    if ('digits' in step) {
      rec.lines.push({ who: 'caller', text: `[keys ${step.digits}]` });
      for (const digit of step.digits) client.send({ type: 'dtmf', digit });
      const reply = await client.reply();
      if (reply.text) rec.lines.push({ who: 'agent', text: reply.text });
      continue;
    }
    rec.lines.push({ who: 'caller', text: step.say });
    client.send({ type: 'prompt', voicePrompt: step.say, lang: 'en-US', last: true });
    if ('hangUpMidTurn' in step) {
      await client.firstToken();
      client.hangUp();
      break;
    }
    if ('bargeInAfterChars' in step) {
      const heard = await client.until(step.bargeInAfterChars);
      client.send({ type: 'interrupt', utteranceUntilInterrupt: heard, durationUntilInterruptMs: heard.length * 60 });
      rec.lines.push({ who: 'agent', text: `${heard} [interrupted]` });
      await client.reply(); // the words after the cut were never heard
      continue;
    }
    const reply = await client.reply();
    if (reply.text) rec.lines.push({ who: 'agent', text: reply.text });
  }
  if (!client.closed) client.hangUp();
  rec.close = await client.closedWith();
  if (call.durationSeconds !== null) {
    await status({ CallStatus: 'completed', CallDuration: String(call.durationSeconds ?? Math.max(1, Math.ceil((Date.now() - startedAt) / 1000))) });
  }
  rec.endedByAgent = client.end !== null;
  rec.handoff = client.end?.handoffData ? (JSON.parse(client.end.handoffData) as Record<string, unknown>) : null;
  return rec;
}

/** A ConversationRelay client in the carrier's role: sends carrier frames, collects the relay's. */
export class RelayClient {
  private buffer = '';
  private waiters: (() => void)[] = [];
  /** The `end` frame, once received. */
  end: { handoffData?: string } | null = null;
  closed = false;
  private closeInfo: { code: number; reason: string } | null = null;
  /** Every frame received, in order. */
  readonly frames: RelayFrame[] = [];
  private lastDone = false;

  private constructor(
    private readonly ws: WebSocket,
    private readonly timeoutMs: number,
  ) {
    ws.on('message', (data) => {
      const f = JSON.parse(data.toString()) as RelayFrame;
      this.frames.push(f);
      if (f.type === 'text') {
        this.buffer += f.token;
        if (f.last) this.lastDone = true;
      } else if (f.type === 'end') this.end = { handoffData: f.handoffData };
      this.wake();
    });
    ws.on('close', (code, reason) => {
      this.closed = true;
      this.closeInfo = { code, reason: reason.toString() };
      this.wake();
    });
  }

  /** Opens a relay socket. @throws when the upgrade is refused (the error names the HTTP status) */
  static open(url: string, timeoutMs = 10_000): Promise<RelayClient> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { perMessageDeflate: false });
      ws.once('open', () => resolve(new RelayClient(ws, timeoutMs)));
      ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`relay refused the upgrade: ${res.statusCode}`), { status: res.statusCode })));
      ws.once('error', reject);
    });
  }

  private wake(): void {
    const w = this.waiters;
    this.waiters = [];
    w.forEach((f) => f());
  }

  private wait(done: () => boolean, what: string): Promise<void> {
    if (done()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`relay: no ${what} within ${this.timeoutMs} ms`)), this.timeoutMs);
      const check = () => {
        if (done()) {
          clearTimeout(timer);
          resolve();
        } else this.waiters.push(check);
      };
      this.waiters.push(check);
    });
  }

  /** Sends a carrier frame (or any text, for malformed-frame tests). */
  send(frame: object | string): void {
    this.ws.send(typeof frame === 'string' ? frame : JSON.stringify(frame));
  }

  /** Waits for the reply's `last: true` (or the socket's end) and returns its text, emptying the buffer. */
  async reply(): Promise<{ text: string }> {
    await this.wait(() => this.lastDone || this.closed, 'reply');
    const text = this.buffer;
    this.buffer = '';
    this.lastDone = false;
    return { text };
  }

  /** Waits for the first token of a reply. */
  async firstToken(): Promise<void> {
    await this.wait(() => this.buffer.length > 0 || this.lastDone || this.closed, 'first token');
  }

  /**
   * Waits until `chars` characters of the reply arrived (or it ended) and returns exactly those heard. The
   * rest of the buffer is dropped; whether the reply's `last: true` already arrived is kept, so a reply the
   * agent finished before the caller's interrupt reached it is not waited for again ({@link reply}).
   */
  async until(chars: number): Promise<string> {
    await this.wait(() => this.buffer.length >= chars || this.lastDone || this.closed, `${chars} characters`);
    const heard = this.buffer.slice(0, chars);
    this.buffer = '';
    return heard;
  }

  /** Hangs up: closes the socket as the carrier does when the caller hangs up. */
  hangUp(): void {
    if (!this.closed) this.ws.close(1000, 'caller hung up');
  }

  /** Resolves with the close code and reason once the socket closed. */
  async closedWith(): Promise<{ code: number; reason: string }> {
    await this.wait(() => this.closed, 'close');
    return this.closeInfo!;
  }
}
