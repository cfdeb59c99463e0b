/**
 * ConversationRelay WebSocket frames (Twilio "ConversationRelay WebSocket messages"; Telnyx
 * "ConversationRelay WebSocket channel" — both carriers speak the same JSON frames). From the carrier:
 * `setup`, `prompt` (`voicePrompt`, `lang`, `last`), `dtmf` (`digit`), `interrupt`
 * (`utteranceUntilInterrupt`, `durationUntilInterruptMs`), `error` (`description`). To the carrier:
 * `text` (`token`, `last`), `play`, `sendDigits`, `language`, `end` (`handoffData`, a string).
 */

/** The `setup` frame: the first frame after the socket opens. */
export interface SetupFrame {
  type: 'setup';
  sessionId: string;
  callSid: string;
  from: string;
  to: string;
  direction?: string;
  accountSid?: string;
  callStatus?: string;
  customParameters?: Record<string, string>;
}

/** A frame the carrier sends. */
export type CarrierFrame =
  | SetupFrame
  | { type: 'prompt'; voicePrompt: string; lang?: string; last: boolean }
  | { type: 'dtmf'; digit: string }
  | { type: 'interrupt'; utteranceUntilInterrupt: string; durationUntilInterruptMs: number }
  | { type: 'error'; description: string };

/** A frame we send to the carrier. */
export type RelayFrame =
  | { type: 'text'; token: string; last: boolean; interruptible?: boolean }
  | { type: 'play'; source: string; loop?: number }
  | { type: 'sendDigits'; digits: string }
  | { type: 'language'; ttsLanguage: string; transcriptionLanguage: string }
  | { type: 'end'; handoffData?: string };

/** Longest frame accepted, bytes (a prompt is one utterance). */
export const MAX_FRAME_BYTES = 64 * 1024;

const str = (v: unknown, max = 10_000): v is string => typeof v === 'string' && v.length <= max;

/**
 * Parses one text frame from the carrier.
 * @returns the frame, or `{ error }` naming what is wrong (the relay closes the socket with it as reason)
 */
export function parseCarrierFrame(text: string): CarrierFrame | { error: string } {
  let v: any;
  try {
    v = JSON.parse(text);
  } catch {
    return { error: 'frame is not JSON' };
  }
  if (!v || typeof v !== 'object' || Array.isArray(v)) return { error: 'frame is not a JSON object' };
  switch (v.type) {
    case 'setup': {
      for (const f of ['sessionId', 'callSid', 'from', 'to'] as const) if (!str(v[f], 200)) return { error: `setup.${f} must be a string` };
      const params = v.customParameters;
      if (params !== undefined && (typeof params !== 'object' || params === null || Array.isArray(params))) return { error: 'setup.customParameters must be an object' };
      return {
        type: 'setup',
        sessionId: v.sessionId,
        callSid: v.callSid,
        from: v.from,
        to: v.to,
        direction: str(v.direction, 50) ? v.direction : undefined,
        accountSid: str(v.accountSid, 200) ? v.accountSid : undefined,
        callStatus: str(v.callStatus, 50) ? v.callStatus : undefined,
        customParameters: params ? Object.fromEntries(Object.entries(params).filter(([, x]) => typeof x === 'string')) as Record<string, string> : undefined,
      };
    }
    case 'prompt':
      if (!str(v.voicePrompt)) return { error: 'prompt.voicePrompt must be a string of at most 10000 characters' };
      // Twilio sends only final prompts unless partial prompts are asked for (then `last` marks the final one); a missing `last` is final.
      return { type: 'prompt', voicePrompt: v.voicePrompt, lang: str(v.lang, 20) ? v.lang : undefined, last: v.last !== false };
    case 'dtmf':
      if (typeof v.digit !== 'string' || !/^[0-9*#A-D]$/.test(v.digit)) return { error: 'dtmf.digit must be one of 0-9, *, #, A-D' };
      return { type: 'dtmf', digit: v.digit };
    case 'interrupt':
      if (!str(v.utteranceUntilInterrupt)) return { error: 'interrupt.utteranceUntilInterrupt must be a string' };
      return { type: 'interrupt', utteranceUntilInterrupt: v.utteranceUntilInterrupt, durationUntilInterruptMs: typeof v.durationUntilInterruptMs === 'number' ? v.durationUntilInterruptMs : 0 };
    case 'error':
      return { type: 'error', description: str(v.description, 2000) ? v.description : '' };
    default:
      return { error: `unknown frame type ${JSON.stringify(String(v.type ?? '')).slice(0, 40)}` };
  }
}

/**
 * What the caller heard of a line cut short: the carrier's `utteranceUntilInterrupt`, kept only as far
 * as it agrees with what we said (whitespace and case aside), so the transcript holds words actually
 * spoken and never words the carrier made up. Empty when the caller heard nothing.
 */
export function heardPart(said: string, utteranceUntilInterrupt: string): string {
  const heard = utteranceUntilInterrupt.trim();
  if (!heard) return '';
  let i = 0;
  let j = 0;
  let matched = 0;
  while (i < said.length && j < heard.length) {
    if (/\s/.test(said[i])) i++;
    else if (/\s/.test(heard[j])) j++;
    else if (said[i].toLowerCase() !== heard[j].toLowerCase()) break;
    else matched = ++i, j++;
  }
  return said.slice(0, matched).trim();
}
