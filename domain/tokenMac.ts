/**
 * The one MAC of the service's signed tokens and links, with domain separation (NIST SP 800-108 §5 "label";
 * RFC 8725 §3.11 and §2.8 "cross-JWT confusion"): every kind of token is MACed as
 * `HMAC-SHA256(secret, "<label>." + <signed text>)` under a label of its own, so a value signed as one kind
 * never verifies as another, even where two kinds share a secret (talk tokens, widget session tokens and
 * relay references are all signed with the organization's talk-token secret).
 */
import crypto from 'node:crypto';

/** The label of each kind of signed value; never reused, never changed (a change invalidates every value signed before). */
export const TOKEN_LABELS = {
  /** `tt_…` talk tokens (api/agents/talkToken.ts). */
  talkToken: 'talk-token',
  /** `wst_…` widget session tokens (api/widgetSession.ts). */
  widgetSession: 'widget-session',
  /** `wvt_…` widget voice tokens (api/widgetVoice.ts). */
  widgetVoice: 'widget-voice-token',
  /** `vrf_…` ConversationRelay references (services/voice/reference.ts). */
  relayReference: 'voice-relay-reference',
  /** Signed text-attachment links (api/sms/media.ts). */
  mediaLink: 'sms-media-link',
  /** `X-Carrier-Signature` of provider callbacks (domain/sms/callbackSignature.ts). */
  callback: 'carrier-callback',
} as const;

/** A kind of signed value. */
export type TokenKind = keyof typeof TOKEN_LABELS;

/**
 * HMAC-SHA256 of `parts` (concatenated as given) under `kind`'s label.
 * @param secret the signing secret of that kind (bytes, or a string read as UTF-8)
 * @returns the 32-byte MAC
 */
export function tokenMac(kind: TokenKind, secret: Buffer | string, ...parts: (string | Buffer)[]): Buffer {
  const h = crypto.createHmac('sha256', secret).update(`${TOKEN_LABELS[kind]}.`, 'utf8');
  for (const p of parts) h.update(p);
  return h.digest();
}

/** Constant-time equality of a presented MAC and the expected one (false, never a throw, on a length mismatch). */
export function macMatches(given: Buffer, expected: Buffer): boolean {
  return given.length === expected.length && crypto.timingSafeEqual(given, expected);
}
