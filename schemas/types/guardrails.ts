/** Guardrails and caller verification of an agent's draft (the Guardrails rows; docs/api-notes.md "Agents": guardrails, "Caller verification"). `npm run schemas` generates one JSON Schema per type. */

/** Whole minutes of a conversation limit (inlined into Guardrails). @asType integer @minimum 1 @maximum 240 */
type ConversationMinutes = number;

/**
 * How a blocked topic is recognised (docs/api-notes.md "Agents": guardrails): `phrase` — the topic's words occur in
 * the message in order, as whole words (no model call); `semantic` — the agent's model judges whether the message
 * is about the topic (one classification call per turn; fail-closed: no verdict, no answer).
 */
export type TopicMatch = 'phrase' | 'semantic';

/**
 * A blocked topic with its match mode and what it covers.
 * @additionalProperties false
 */
export interface BlockedTopicRule {
  /** The topic, e.g. `medical advice`; said in the refusal. @minLength 1 @maxLength 200 */
  topic: string;
  /** Default `phrase`. */
  match?: TopicMatch;
  /** What the topic covers, for the model judging `semantic` topics (e.g. "symptoms, diagnoses, medicines, dosages"). @maxLength 1000 */
  description?: string | null;
}

/** A blocked topic: a plain string is a `phrase` topic (the shape stored before match modes existed). */
export type BlockedTopic = string | BlockedTopicRule;

/**
 * Guardrails of the draft (`GET/PUT /agents/{agentId}/guardrails`); PUT replaces them.
 * @additionalProperties false
 */
export interface Guardrails {
  /** Topics the agent declines to discuss: strings (matched as phrases) or rules with a match mode. @maxItems 100 */
  blockedTopics: BlockedTopic[];
  /** Phrases the agent never says (checked on every reply). @maxItems 100 */
  forbiddenPhrases: string[];
  /** Mask card numbers, SSNs and similar in transcripts and tool arguments. */
  redactPii: boolean;
  /** Replace profanity in replies. */
  profanityFilter: boolean;
  /** Situations that hand the conversation to a person. @maxItems 50 */
  escalateOn: string[];
  /** Longest conversation in minutes; null for no limit. */
  maxConversationMinutes: ConversationMinutes | null;
}

/** How a caller proves who they are before sensitive skills run. */
export type CallerVerificationMethod = 'caller_id' | 'pin' | 'dob_and_zip' | 'sms_otp';

/**
 * When the caller is verified (docs/api-notes.md "Caller verification"): `always` — method `pin` asks for the PIN right
 * after the greeting and every answer is a PIN attempt until it matched; `for_protected_actions` — everything is
 * answered before verification, and the PIN is asked for only when the caller asks for a protected action (a
 * skill in `requiredForSkills`, a `lookup_record` skill, or a playbook marked `requiresVerifiedCaller` or running
 * a protected skill).
 */
export type CallerVerificationRequired = 'always' | 'for_protected_actions';

/**
 * Caller verification of the draft (`GET/PUT /agents/{agentId}/caller-verification`).
 * @additionalProperties false
 */
export interface CallerVerification {
  enabled: boolean;
  /** Required when enabled. */
  method: CallerVerificationMethod | null;
  /** Names of skills that run only for verified callers. @maxItems 100 */
  requiredForSkills: string[];
  /** Failed attempts before the conversation is handed off. @minimum 1 @maximum 10 @asType integer */
  maxAttempts: number;
  /**
   * When verification happens. Omitted on PUT: the stored value is kept; agents created since the field exists
   * default to `for_protected_actions`, agents stored before it keep `always` (docs/api-notes.md "Caller verification").
   */
  required?: CallerVerificationRequired;
  /**
   * Method `pin`: the member of the caller's record `fields` holding the PIN (default `pin`).
   * @pattern ^[A-Za-z][A-Za-z0-9_ -]{0,63}$
   */
  pinField?: string;
}
