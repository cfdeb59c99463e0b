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
  /** The carrier's voice, TTS and transcription providers (domain/voice/carrierVoices.ts); absent: the carrier's defaults. */
  speech?: { voice: string | null; ttsProvider: string | null; transcriptionProvider: string | null };
  /** Spoken (`<Say>`) before the relay starts: the recording notice (docs/voice.md "Phone settings on calls"). */
  notice?: string | null;
}

/** `<Response><Connect><ConversationRelay …/></Connect></Response>` */
export function connectRelayMarkup(m: RelayMarkup): string {
  const attrs: [string, string][] = [['url', m.url]];
  if (m.welcomeGreeting) attrs.push(['welcomeGreeting', m.welcomeGreeting]);
  attrs.push(['language', m.language], ['dtmfDetection', String(m.dtmfDetection)], ['interruptible', m.interruptible ? 'any' : 'none']);
  if (m.speech?.ttsProvider) attrs.push(['ttsProvider', m.speech.ttsProvider]);
  if (m.speech?.voice) attrs.push(['voice', m.speech.voice]);
  if (m.speech?.transcriptionProvider) attrs.push(['transcriptionProvider', m.speech.transcriptionProvider]);
  const params = Object.entries(m.parameters ?? {})
    .map(([k, v]) => `<Parameter name="${xmlEscape(k)}" value="${xmlEscape(v)}"/>`)
    .join('');
  const action = m.action ? ` action="${xmlEscape(m.action)}"` : '';
  return (
    `<?xml version="1.0" encoding="UTF-8"?><Response>${m.notice ? say(m.notice, m.language) : ''}<Connect${action}>` +
    `<ConversationRelay ${attrs.map(([k, v]) => `${k}="${xmlEscape(v)}"`).join(' ')}>${params}</ConversationRelay>` +
    `</Connect></Response>`
  );
}

/** `<Say language=…>text</Say>` */
function say(text: string, language: string): string {
  return `<Say language="${xmlEscape(language)}">${xmlEscape(text)}</Say>`;
}

/** A spoken refusal and a hang-up. */
export function refusalMarkup(sentence: string, language = 'en-US'): string {
  return `<?xml version="1.0" encoding="UTF-8"?><Response>${say(sentence, language)}<Hangup/></Response>`;
}

/**
 * A voicemail: the greeting, a beep, then `<Record>` up to `maxSeconds` (TwiML/TeXML `<Record>`: the
 * recording is posted to `action` with `RecordingUrl`, `RecordingDuration`, `RecordingSid`; with
 * `transcribe`, the transcription goes to the same URL as `TranscriptionText`), then the hang-up.
 */
export function voicemailMarkup(m: { greeting: string; language: string; maxSeconds: number; action: string; transcribe: boolean }): string {
  const transcribe = m.transcribe ? ` transcribe="true" transcribeCallback="${xmlEscape(m.action)}"` : '';
  return (
    `<?xml version="1.0" encoding="UTF-8"?><Response>${say(m.greeting, m.language)}` +
    `<Record action="${xmlEscape(m.action)}" method="POST" maxLength="${Math.round(m.maxSeconds)}" playBeep="true" finishOnKey="#"${transcribe}/><Hangup/></Response>`
  );
}

/**
 * A spoken line, then the call is dialed through to `destination` (an E.164 number or a `sip:` URI),
 * its end posted to `action` (`DialCallStatus`: a busy or unanswered destination falls back there).
 * @param whisperUrl a URL whose markup the person answering hears before being connected (Twilio
 *   `<Number url>`: the conversation's summary)
 */
export function transferMarkup(m: { line: string | null; language: string; destination: string; action?: string; whisperUrl?: string; timeoutSeconds?: number }): string {
  const url = m.whisperUrl ? ` url="${xmlEscape(m.whisperUrl)}"` : '';
  const target = m.destination.startsWith('sip') ? `<Sip${url}>${xmlEscape(m.destination)}</Sip>` : `<Number${url}>${xmlEscape(m.destination)}</Number>`;
  const action = m.action ? ` action="${xmlEscape(m.action)}" method="POST"` : '';
  return `<?xml version="1.0" encoding="UTF-8"?><Response>${m.line ? say(m.line, m.language) : ''}<Dial timeout="${m.timeoutSeconds ?? 25}"${action}>${target}</Dial></Response>`;
}
