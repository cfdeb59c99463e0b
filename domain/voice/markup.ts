/**
 * Call-control markup answering a voice webhook: TwiML (Twilio) and TeXML (Telnyx) share these verbs —
 * `<Connect><ConversationRelay url=… welcomeGreeting=… language=… dtmfDetection=… interruptible=…>`
 * with `<Parameter>` children delivered in the `setup` frame's `customParameters`, and `<Say>` +
 * `<Hangup/>` for a refusal (Twilio "TwiML Voice: <ConversationRelay>"; Telnyx "Conversation Relay",
 * TeXML).
 */

/** XML-escapes text for an attribute or element. */
export function xmlEscape(s: string): string {
  return s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);
}

/** What the relay connection is set up with. */
export interface RelayMarkup {
  /** `wss://…/api/v1/voice/relay?ref=…` */
  url: string;
  /** Spoken by the carrier when the relay starts (null: the agent has no greeting). */
  welcomeGreeting: string | null;
  /** BCP 47 language of speech recognition and synthesis, e.g. `en-US`. */
  language: string;
  dtmfDetection: boolean;
  /** Whether the caller may barge in over the agent's speech. */
  interruptible: boolean;
  /** Where the carrier posts when the relay ends (the `<Connect action>`), absolute URL. */
  action?: string;
  /** Delivered in `setup.customParameters`. */
  parameters?: Record<string, string>;
}

/** `<Response><Connect><ConversationRelay …/></Connect></Response>` */
export function connectRelayMarkup(m: RelayMarkup): string {
  const attrs: [string, string][] = [['url', m.url]];
  if (m.welcomeGreeting) attrs.push(['welcomeGreeting', m.welcomeGreeting]);
  attrs.push(['language', m.language], ['dtmfDetection', String(m.dtmfDetection)], ['interruptible', m.interruptible ? 'any' : 'none']);
  const params = Object.entries(m.parameters ?? {})
    .map(([k, v]) => `<Parameter name="${xmlEscape(k)}" value="${xmlEscape(v)}"/>`)
    .join('');
  const action = m.action ? ` action="${xmlEscape(m.action)}"` : '';
  return (
    `<?xml version="1.0" encoding="UTF-8"?><Response><Connect${action}>` +
    `<ConversationRelay ${attrs.map(([k, v]) => `${k}="${xmlEscape(v)}"`).join(' ')}>${params}</ConversationRelay>` +
    `</Connect></Response>`
  );
}

/** A spoken refusal and a hang-up. */
export function refusalMarkup(sentence: string, language = 'en-US'): string {
  return `<?xml version="1.0" encoding="UTF-8"?><Response><Say language="${xmlEscape(language)}">${xmlEscape(sentence)}</Say><Hangup/></Response>`;
}
