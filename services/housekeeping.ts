/**
 * Housekeeping beside the webhook dispatcher (worker processes, `npm start`; several may run):
 * - the analytics rollup sweep (docs/api-notes.md "Observe"): every `rollupIntervalMs` it adds the conversations that
 *   ended since the last sweep to the hourly rollup, in batches (db/repositories/conversations.ts
 *   `rollUpEnded`), so no end of a conversation waits on the rollup's row. Analytics never depend on it: what
 *   it has not reached yet is read live;
 * - the OAuth purge (docs/team-and-oauth.md "Connect an app with OAuth"): every `purgeIntervalMs` it deletes authorization codes, refresh and
 *   access tokens and sign-in sessions expired for more than a day (db/repositories/oauth.ts
 *   `purgeExpiredOAuthRows`); an expired credential is refused whether its row exists or not. The same pass
 *   deletes sign-in throttle counters idle for a day and no longer closed (db/repositories/throttles.ts);
 * - the idle sweep (docs/api-notes.md "Conversations": idle timeouts): every `idleIntervalMs` it ends the chat,
 *   widget and SMS conversations silent for longer than their agent's idle timeout (`endReason: idle`,
 *   `conversation.ended`) and has them analysed, in batches (services/conversations/service.ts
 *   `sweepIdleConversations`; rows are locked with SKIP LOCKED, so every process may run it). A sweep rather than
 *   a durable timer per conversation: one indexed statement serves every open conversation, a message moves no
 *   timer (no workflow signal per turn), and it works where no Temporal runs; a conversation ends within one
 *   interval of its timeout;
 * - the re-embedding check (docs/knowledge.md "Changing the embeddings model"): once at start and every
 *   `reembedIntervalMs`, organizations whose knowledge vectors are not of the configured embeddings model get the
 *   `knowledge-reembed/{orgId}` workflow (services/knowledge/reembed.ts; USE_EXISTING, so several processes may run it).
 */
import { recoverPendingAnswers } from './sms/answer';
import type { Logger } from 'pino';
import type { Db } from '../db';
import { rollUpEnded } from '../db/repositories/conversations';
import { purgeExpiredOAuthRows } from '../db/repositories/oauth';
import { purgeIdleThrottles } from '../db/repositories/throttles';
import type { Client } from '@temporalio/client';
import type { LlmProvider } from '../domain/conversations/llm';
import { createLlm } from '../providers/llm';
import { IDLE_SWEEP_BATCH, sweepIdleConversations } from './conversations/service';
import { startKnowledgeReembeds } from './knowledge/reembed';

/** Conversations rolled up per statement. */
export const ROLLUP_BATCH = 500;
/** How long an expired OAuth row is kept, seconds (one day: support can still see what just expired). */
export const OAUTH_PURGE_GRACE_SECONDS = 86_400;

/** Running housekeeping. */
export interface Housekeeping {
  /** Rolls up everything ended now, batch by batch. @returns how many conversations it rolled up */
  sweepRollup(): Promise<number>;
  /** Deletes the expired OAuth rows. @returns how many rows it deleted */
  purgeExpired(): Promise<number>;
  /**
   * Ends every conversation idle as of `now` (ms since the epoch; default now), batch by batch, and has each analysed.
   * @returns how many conversations it ended
   */
  sweepIdle(now?: number): Promise<number>;
  /**
   * Hands texts still owed an agent's answer after their grace (the process that received them died) to
   * `sms-reply/{id}` (services/sms/answer.ts `recoverPendingAnswers`); none without a Temporal client.
   * @param now the time to judge by (default now) @returns how many were handed over
   */
  recoverAnswers(now?: Date): Promise<number>;
  /**
   * Starts `knowledge-reembed/{orgId}` for every organization whose knowledge vectors are not of the configured
   * embeddings model (services/knowledge/reembed.ts); none without a Temporal client or with a lexical-only provider.
   * @returns the organizations concerned
   */
  reconcileEmbeddings(): Promise<string[]>;
  /** Stops the timers and waits for the work in progress. */
  stop(): Promise<void>;
}

/**
 * Starts housekeeping.
 * @param opts.rollupIntervalMs pause between rollup sweeps, ms (default 2,000; 0: no timer)
 * @param opts.purgeIntervalMs pause between OAuth purges, ms (default 3,600,000; 0: no timer)
 * @param opts.idleIntervalMs pause between idle sweeps, ms (default 30,000; 0: no timer)
 * @param opts.llm the model of the idle conversations' analyses (default: the configured one, providers/llm `createLlm`)
 * @param opts.temporal when given, each analysis runs as the `conversation-analysis/{id}` workflow on the worker
 */
export function startHousekeeping(opts: {
  db: Db;
  logger: Logger;
  rollupIntervalMs?: number;
  purgeIntervalMs?: number;
  idleIntervalMs?: number;
  /** How often texts still owed an agent's answer are looked for, ms (default 15 s; 0: never). */
  answersIntervalMs?: number;
  /** How often knowledge vectors are checked against the configured embeddings model, ms (default 5 min, and once at start; 0: never). */
  reembedIntervalMs?: number;
  llm?: LlmProvider;
  temporal?: { client: Client; taskQueue: string };
}): Housekeeping {
  let stopped = false;
  const timers = new Set<NodeJS.Timeout>();
  const inFlight = new Set<Promise<unknown>>();

  /** Runs `task` at most once at a time; a call while it runs joins that run. */
  const single = <T>(task: () => Promise<T>): (() => Promise<T>) => {
    let running: Promise<T> | null = null;
    return () => {
      if (!running) {
        running = task().finally(() => {
          inFlight.delete(running!);
          running = null;
        });
        inFlight.add(running);
      }
      return running;
    };
  };

  /** Runs `task` every `intervalMs` (after the previous run ended); a failure is logged and retried next time. */
  const every = (intervalMs: number, name: string, task: () => Promise<unknown>) => {
    if (intervalMs <= 0) return;
    const schedule = () => {
      if (stopped) return;
      const timer = setTimeout(() => {
        timers.delete(timer);
        task().then(schedule, (err: unknown) => {
          opts.logger.warn({ err }, `${name} failed; retrying at the next interval`);
          schedule();
        });
      }, intervalMs);
      timer.unref();
      timers.add(timer);
    };
    schedule();
  };

  const sweepRollup = single(async () => {
    let total = 0;
    for (;;) {
      const n = await rollUpEnded(opts.db, ROLLUP_BATCH);
      total += n;
      if (n < ROLLUP_BATCH || stopped) return total;
    }
  });
  const purgeExpired = single(async () => {
    const n = await purgeExpiredOAuthRows(opts.db, OAUTH_PURGE_GRACE_SECONDS);
    // A day is every throttle policy's longest memory (domain/throttle.ts forgetSeconds).
    const throttles = await purgeIdleThrottles(opts.db, OAUTH_PURGE_GRACE_SECONDS);
    return n.codes + n.refreshTokens + n.accessTokens + n.sessions + throttles;
  });
  let llm = opts.llm;
  let idleAt: number | undefined;
  const idleSweep = single(async () => {
    const deps = { db: opts.db, llm: (llm ??= createLlm()), temporal: opts.temporal, log: opts.logger };
    const now = idleAt ?? Date.now();
    let total = 0;
    for (;;) {
      const n = (await sweepIdleConversations(deps, { now, limit: IDLE_SWEEP_BATCH })).length;
      total += n;
      if (n < IDLE_SWEEP_BATCH || stopped) return total;
    }
  });
  const sweepIdle = (now?: number) => {
    idleAt = now;
    return idleSweep();
  };
  let answersAt: Date | undefined;
  const answersSweep = single(async () => (opts.temporal ? recoverPendingAnswers(opts.db, opts.temporal, answersAt ?? new Date()) : 0));
  const recoverAnswers = (now?: Date) => {
    answersAt = now;
    return answersSweep();
  };
  every(opts.rollupIntervalMs ?? 2000, 'analytics rollup sweep', sweepRollup);
  every(opts.answersIntervalMs ?? 15_000, 'pending SMS answers sweep', () => recoverAnswers());
  every(opts.idleIntervalMs ?? 30_000, 'idle conversation sweep', () => sweepIdle());
  every(opts.purgeIntervalMs ?? 3_600_000, 'OAuth purge', purgeExpired);
  // A changed EMBEDDINGS_MODEL takes effect on restart: reconcile once now, then now and then (docs/knowledge.md).
  const reconcileEmbeddings = single(async () => (opts.temporal ? startKnowledgeReembeds({ db: opts.db, temporal: opts.temporal }) : []));
  const reembedMs = opts.reembedIntervalMs ?? 300_000;
  if (reembedMs > 0) {
    reconcileEmbeddings().catch((err: unknown) => opts.logger.warn({ err }, 'knowledge re-embedding check failed; retrying at the next interval'));
    every(reembedMs, 'knowledge re-embedding check', reconcileEmbeddings);
  }
  return {
    reconcileEmbeddings,
    sweepRollup,
    purgeExpired,
    sweepIdle,
    recoverAnswers,
    stop: async () => {
      stopped = true;
      for (const t of timers) clearTimeout(t);
      await Promise.allSettled([...inFlight]);
    },
  };
}
