/** The voice catalogue and an agent's voice (the Voice rows). `npm run schemas` generates one JSON Schema per type. */

/** A voice of the sandbox voice catalogue. */
export interface Voice {
  /** e.g. `voice_ava`. */
  id: string;
  name: string;
  provider: string;
  /** BCP 47 tags the voice speaks. */
  languages: string[];
  gender: 'female' | 'male' | 'neutral';
  accent: string;
  /** Style tags such as `warm`, `calm`, `energetic`. */
  tags: string[];
  /** @format uri */
  previewUrl: string;
}

/**
 * Request body of `POST /voices/search`; every criterion given must match.
 * @additionalProperties false
 */
export interface VoiceSearch {
  /** Words matched against name, accent and tags (case-insensitive). @maxLength 200 */
  query?: string;
  /** BCP 47 tag the voice must speak. @maxLength 35 */
  language?: string;
  gender?: 'female' | 'male' | 'neutral';
  /** All of these tags. @maxItems 10 */
  tags?: string[];
}

/** Page of voices. */
export interface VoicePage {
  items: Voice[];
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * Request body of `PUT /agents/{id}/voice`.
 * @additionalProperties false
 */
export interface AgentVoiceSet {
  /** A voice id of `GET /voices` that speaks the agent's language. @maxLength 64 */
  voiceId: string;
}
