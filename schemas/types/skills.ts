/** Skills of an agent and the skill type catalogue (spec "What the service does", the Skills rows). `npm run schemas` generates one JSON Schema per type. */

/** One skill type of the catalogue (`GET /skill-types`). */
export interface SkillType {
  /** e.g. `http_request`, `book_appointment`. */
  type: string;
  name: string;
  description: string;
  /** JSON Schema (draft-07) of the skill's `config`. */
  configSchema: Record<string, unknown>;
  /** Whether a skill of this type sends data outside the system. */
  sendsData: boolean;
}

/**
 * Request body of `POST /agents/{agentId}/skills`.
 * @additionalProperties false
 */
export interface SkillCreate {
  /** Unique per agent; used by playbooks and in diffs (`skills[<name>]`). @pattern ^[a-z][a-z0-9_]{0,63}$ */
  name: string;
  /** A type from `GET /skill-types`. @maxLength 64 */
  type: string;
  /** What the skill does, shown to the model and in the pre-publish report. @maxLength 1000 */
  description?: string | null;
  /** Validated against the type's `configSchema`. */
  config: Record<string, unknown>;
}

/**
 * Request body of `PATCH /agents/{agentId}/skills/{id}`; the type cannot change.
 * @additionalProperties false
 */
export interface SkillPatch {
  /** @pattern ^[a-z][a-z0-9_]{0,63}$ */
  name?: string;
  /** @maxLength 1000 */
  description?: string | null;
  /** Replaces the whole config; validated against the type. */
  config?: Record<string, unknown>;
}

/** A skill: one atomic action of the agent (spec "What the service does"). */
export interface Skill {
  /** `skl_…` */
  id: string;
  agentId: string;
  name: string;
  type: string;
  description: string | null;
  config: Record<string, unknown>;
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  updatedAt: string;
}


/** Page of skills. */
export interface SkillPage {
  items: Skill[];
  nextCursor: string | null;
  hasMore: boolean;
}


/** The skill type catalogue. */
export interface SkillTypeList {
  items: SkillType[];
}
