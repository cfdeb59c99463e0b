/**
 * The sandbox carrier's texter (docs/sms.md "Texting the agent in the sandbox"): sends one inbound text to the running
 * API the way the sandbox carrier reports one — a `message.inbound` callback (api/sms/callbacks.ts) posted to
 * `POST {api base}/sms/provider-callbacks/sandbox`, signed with `X-Carrier-Signature` under CARRIER_CALLBACK_SECRET
 * (domain/sms/callbackSignature.ts). What `npm run cli -- texts send` uses, as `calls place` uses the sandbox caller.
 */
import crypto from 'node:crypto';
import { callbackSecret, signCallback, SIGNATURE_HEADER } from '../../domain/sms/callbackSignature';

/** One inbound text: the sender, the organization's number it is sent to (both E.164) and its words. */
export interface SandboxText {
  /** The API's base URL (`…/api/v1`). */
  baseUrl: string;
  from: string;
  to: string;
  text: string;
}

/** What the API answered. */
export interface SandboxTextResult {
  /** The carrier message id the callback carried (`SMsandbox…`): the stored text's `providerMessageId`. */
  providerMessageId: string;
  /** HTTP status of the callback (200 when received). */
  status: number;
  /** The answer's body: `{received, duplicate}`, or the problem. */
  body: unknown;
}

/**
 * Posts one signed `message.inbound` callback. @throws Error when CARRIER_CALLBACK_SECRET is not set or the API cannot
 * be reached
 */
export async function sendSandboxText(t: SandboxText): Promise<SandboxTextResult> {
  const providerMessageId = `SMsandbox${crypto.randomBytes(8).toString('hex')}`;
  const raw = JSON.stringify({ type: 'message.inbound', id: providerMessageId, from: t.from, to: t.to, text: t.text });
  const res = await fetch(`${t.baseUrl.replace(/\/+$/, '')}/sms/provider-callbacks/sandbox`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [SIGNATURE_HEADER]: signCallback(callbackSecret('sandbox'), raw) },
    body: raw,
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // a non-JSON answer is shown as it came
  }
  return { providerMessageId, status: res.status, body };
}
