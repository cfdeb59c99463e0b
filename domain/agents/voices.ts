/**
 * The sandbox voice catalogue (`GET /voices`, `POST /voices/search`) and the speech engine's language
 * list (spec "Errors": 422 for a language the plan's speech engine does not support). The sandbox
 * behaves like a real TTS provider's catalogue: stable ids, languages per voice, style tags.
 */
import type { Voice, VoiceSearch } from '../../schemas/types/voices';

/**
 * BCP 47 tags the plan's speech engine (speech-to-text and text-to-speech) supports. One plan exists in
 * this deployment; a per-plan list would replace this constant.
 */
export const SPEECH_ENGINE_LANGUAGES: readonly string[] = [
  'en-US', 'en-GB', 'en-AU', 'en-IN', 'es-US', 'es-ES', 'es-MX', 'fr-FR', 'fr-CA', 'de-DE', 'it-IT', 'pt-BR', 'nl-NL', 'ja-JP',
];

/** Default language of a new agent. */
export const DEFAULT_LANGUAGE = 'en-US';

/** True when the speech engine supports `tag` (exact match, case-sensitive canonical form). */
export function isSupportedLanguage(tag: string): boolean {
  return SPEECH_ENGINE_LANGUAGES.includes(tag);
}

const v = (id: string, name: string, languages: string[], gender: Voice['gender'], accent: string, tags: string[]): Voice => ({
  id,
  name,
  provider: 'sandbox',
  languages,
  gender,
  accent,
  tags,
  previewUrl: `https://voices.sandbox.example/${id}.mp3`,
});

/** Every voice, ordered by id (the list order and pagination key). */
export const VOICES: readonly Voice[] = [
  v('voice_aiko', 'Aiko', ['ja-JP'], 'female', 'Tokyo', ['calm', 'polite']),
  v('voice_ana', 'Ana', ['pt-BR'], 'female', 'Brazilian', ['warm', 'friendly']),
  v('voice_ava', 'Ava', ['en-US', 'es-US'], 'female', 'American', ['warm', 'friendly', 'conversational']),
  v('voice_camille', 'Camille', ['fr-FR', 'fr-CA'], 'female', 'Parisian', ['elegant', 'calm']),
  v('voice_daan', 'Daan', ['nl-NL'], 'male', 'Dutch', ['clear', 'professional']),
  v('voice_giulia', 'Giulia', ['it-IT'], 'female', 'Roman', ['energetic', 'friendly']),
  v('voice_hans', 'Hans', ['de-DE'], 'male', 'German', ['professional', 'calm']),
  v('voice_isla', 'Isla', ['en-GB', 'en-AU'], 'female', 'British', ['professional', 'clear']),
  v('voice_leo', 'Leo', ['en-US'], 'male', 'American', ['calm', 'professional', 'deep']),
  v('voice_lucia', 'Lucía', ['es-ES', 'es-MX', 'es-US'], 'female', 'Castilian', ['warm', 'clear']),
  v('voice_mateo', 'Mateo', ['es-MX', 'es-US'], 'male', 'Mexican', ['friendly', 'energetic']),
  v('voice_priya', 'Priya', ['en-IN', 'en-GB'], 'female', 'Indian', ['warm', 'clear']),
  v('voice_quinn', 'Quinn', ['en-US', 'en-GB'], 'neutral', 'American', ['neutral', 'clear', 'conversational']),
  v('voice_sam', 'Sam', ['en-AU'], 'male', 'Australian', ['friendly', 'casual']),
];

const BY_ID = new Map(VOICES.map((x) => [x.id, x]));

/** The voice with `id`, or undefined. */
export function findVoice(id: string): Voice | undefined {
  return BY_ID.get(id);
}

/** The voice used when an agent names none: the first catalogue voice speaking `language`. */
export function defaultVoiceFor(language: string): Voice | undefined {
  return VOICES.find((x) => x.languages.includes(language));
}

/** Voices matching every given criterion of a search (case-insensitive words over name, accent, tags). */
export function searchVoices(q: VoiceSearch): Voice[] {
  const words = (q.query ?? '').toLowerCase().split(/\s+/).filter(Boolean);
  return VOICES.filter((x) => {
    if (q.language && !x.languages.some((l) => l.toLowerCase() === q.language!.toLowerCase())) return false;
    if (q.gender && x.gender !== q.gender) return false;
    if (q.tags?.length && !q.tags.every((t) => x.tags.includes(t.toLowerCase()))) return false;
    const hay = `${x.name} ${x.accent} ${x.tags.join(' ')} ${x.id}`.toLowerCase();
    return words.every((w) => hay.includes(w));
  });
}
