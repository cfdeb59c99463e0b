/**
 * The carrier's speech settings for an agent's catalogue voice (docs/voice.md "The agent's voice on the
 * carrier"): every catalogue voice is rendered by an Amazon Polly neural voice of its language (Amazon
 * Polly "Available voices"; a Standard voice where Polly has no neural one of that gender), named the way
 * each carrier names it — Twilio ConversationRelay `ttsProvider="Amazon" voice="Joanna-Neural"`, Telnyx
 * `voice="AWS.Polly.Joanna-Neural"` (TeXML `<ConversationRelay>` and Call Control
 * `conversation_relay_start`) — and speech is transcribed by Deepgram on both (Twilio
 * `transcriptionProvider="Deepgram"`, Telnyx `transcriptionProvider="deepgram"` / `transcription_engine`).
 */

/** A Polly voice and its engine. */
interface PollyVoice {
  name: string;
  engine: 'Neural' | 'Standard';
}

const n = (name: string): PollyVoice => ({ name, engine: 'Neural' });
const std = (name: string): PollyVoice => ({ name, engine: 'Standard' });

/** Per catalogue voice (domain/agents/voices.ts), the Polly voice for each language it speaks. */
const POLLY: Record<string, Record<string, PollyVoice>> = {
  voice_aiko: { 'ja-JP': n('Kazuha') },
  voice_ana: { 'pt-BR': n('Camila') },
  voice_ava: { 'en-US': n('Joanna'), 'es-US': n('Lupe') },
  voice_camille: { 'fr-FR': n('Lea'), 'fr-CA': n('Gabrielle') },
  voice_daan: { 'nl-NL': std('Ruben') },
  voice_giulia: { 'it-IT': n('Bianca') },
  voice_hans: { 'de-DE': n('Daniel') },
  voice_isla: { 'en-GB': n('Amy'), 'en-AU': n('Olivia') },
  voice_leo: { 'en-US': n('Matthew') },
  voice_lucia: { 'es-ES': n('Lucia'), 'es-MX': n('Mia'), 'es-US': n('Lupe') },
  voice_mateo: { 'es-MX': n('Andres'), 'es-US': n('Pedro') },
  voice_priya: { 'en-IN': n('Kajal'), 'en-GB': n('Amy') },
  voice_quinn: { 'en-US': n('Ruth'), 'en-GB': n('Arthur') },
  voice_sam: { 'en-AU': std('Russell') },
};

/** The carriers whose relay markup and commands carry speech settings. */
export type SpeechCarrier = 'twilio' | 'telnyx';

/** What a carrier is told about speech. */
export interface CarrierSpeech {
  /** BCP 47 language of synthesis and recognition. */
  language: string;
  /** The carrier's voice id (Twilio: `Joanna-Neural`; Telnyx: `AWS.Polly.Joanna-Neural`), or null: the carrier's default. */
  voice: string | null;
  /** Twilio `ttsProvider` (`Amazon`); null on Telnyx, which derives it from `voice`. */
  ttsProvider: string | null;
  /** Speech-to-text provider (`Deepgram` on Twilio, `deepgram` on Telnyx). */
  transcriptionProvider: string;
}

/**
 * The speech settings a carrier gets for an agent's voice and language.
 * @param voiceId the agent's catalogue voice (`voice_…`), or null
 * @param language BCP 47, e.g. `en-US`
 */
export function carrierSpeech(carrier: SpeechCarrier, voiceId: string | null | undefined, language: string): CarrierSpeech {
  const byLanguage = voiceId ? POLLY[voiceId] : undefined;
  const polly = byLanguage?.[language] ?? (byLanguage ? Object.values(byLanguage)[0] : undefined);
  const id = polly ? `${polly.name}-${polly.engine}` : null;
  if (carrier === 'telnyx') return { language, voice: id ? `AWS.Polly.${id}` : null, ttsProvider: null, transcriptionProvider: 'deepgram' };
  return { language, voice: id, ttsProvider: id ? 'Amazon' : null, transcriptionProvider: 'Deepgram' };
}
