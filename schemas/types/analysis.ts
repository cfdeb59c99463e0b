/**
 * Analysis re-runs (docs/api-notes.md "Conversation analysis"): revisions of a conversation's analysis and bulk runs.
 */
import type { AnalysisField } from './agents';

/** One analysis of a conversation; the latest revision is what the conversation shows. */
export interface AnalysisRevision {
  /** `anr_…` */
  id: string;
  conversationId: string;
  /** 1 for the analysis after the conversation ended, then one more per re-run. */
  revision: number;
  /** `end` (after the conversation ended), `rerun` (`POST /conversations/{id}/analysis`) or `run` (a bulk run). */
  trigger: 'end' | 'rerun' | 'run';
  /** The bulk run (`arn_…`) that made it, when one did. */
  runId: string | null;
  status: 'completed' | 'failed';
  summary: string | null;
  outcome: string | null;
  sentiment: string | null;
  fields: Record<string, string | number | boolean>;
  notes: string[];
  /** The extraction fields this revision asked for. */
  plan: AnalysisField[];
  error: string | null;
  model: string | null;
  /** @format date-time */
  createdAt: string;
}

/** A page of revisions, newest first. */
export interface AnalysisRevisionPage {
  items: AnalysisRevision[];
  nextCursor: string | null;
  hasMore: boolean;
}

/**
 * Request body of `POST /conversations/{id}/analysis` (optional): the extraction fields to use instead of the agent's
 * current analysis plan.
 * @additionalProperties false
 */
export interface AnalysisRerunRequest {
  /** @maxItems 30 */
  fields?: AnalysisField[];
}

/**
 * Request body of `POST /conversations/analysis-runs`: which ended conversations to analyse again, and optionally
 * the extraction fields (else each conversation's agent's current plan).
 * @additionalProperties false
 */
export interface AnalysisRunCreate {
  /** Only this agent's conversations (`agt_…`). */
  agentId?: string;
  channel?: 'chat' | 'web' | 'sms' | 'voice';
  /** Conversations started at or after this instant. @format date-time */
  from?: string;
  /** Conversations started before this instant. @format date-time */
  to?: string;
  /** @maxItems 30 */
  fields?: AnalysisField[];
}

/** A bulk analysis re-run (workflow `analysis-run/{id}`) and its progress. */
export interface AnalysisRun {
  /** `arn_…` */
  id: string;
  /** queued → running → completed | failed */
  status: 'queued' | 'running' | 'completed' | 'failed';
  filter: { agentId?: string; channel?: string; from?: string; to?: string };
  /** The extraction fields given, or null: each conversation's agent's current plan. */
  fields: AnalysisField[] | null;
  /** Ended conversations the run covers (fixed when it was created). */
  total: number;
  /** Of those, analysed so far, and failed analyses. */
  completed: number;
  failed: number;
  /** Share done, 0..1. */
  progress: number;
  error: string | null;
  /** @format date-time */
  createdAt: string;
  /** @format date-time */
  completedAt: string | null;
}

/** A page of bulk runs, newest first. */
export interface AnalysisRunPage {
  items: AnalysisRun[];
  nextCursor: string | null;
  hasMore: boolean;
}
