/**
 * Activities of workflow `agent-simulation/{id}` (docs/api-notes.md "Conversations": `POST /agents/{agentId}/simulate`):
 * start the simulated conversation, run one caller turn at a time (a scripted message, or the simulated
 * caller's next message from the LLM provider), then judge the expectations. Each is safe to retry: the
 * conversation id is derived from the simulation's, and a turn already stored is not run again (the
 * conversation's turn count is the turn's key).
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { ActivityDeps } from './index';
import { createLlm } from '../providers/llm';
import { createSkillHttpClient, type SkillHttpClient } from '../providers/http/request';
import type { LlmMessage, LlmProvider } from '../domain/conversations/llm';
import { simulatedCallerMessage } from '../services/conversations/simulatedCaller';
import { evaluateExpectations } from '../domain/conversations/expectations';

export { simulationTurns } from '../domain/conversations/expectations';
import { ApiError } from '../domain/errors';
import { allMessages, getConversation, turnReceipts } from '../db/repositories/conversations';
import { isUniqueViolation } from '../db/repositories/agents';
import { completeSimulation, failSimulation, getSimulation, setSimulationProgress, simulationConversationId } from '../db/repositories/simulations';
import { finishConversation, sendMessage, startConversation } from '../services/conversations/service';

/** Reference to one simulation. */
export interface SimulationRef {
  orgId: string;
  simulationId: string;
}

/** Builds the simulation activities; `providers` replace the configured LLM and skill HTTP client (tests). */
export function createSimulationActivities(deps: ActivityDeps, providers: { llm?: LlmProvider; http?: SkillHttpClient } = {}) {
  const { db } = deps;
  let llm = providers.llm;
  let http = providers.http;
  const conv = () => ({ db, llm: (llm ??= createLlm()), http: (http ??= createSkillHttpClient()) });
  const load = async (ref: SimulationRef) => {
    const sim = await getSimulation(db, ref.orgId, ref.simulationId);
    if (!sim) throw ApplicationFailure.nonRetryable(`simulation ${ref.simulationId} not found`, 'simulation_not_found');
    return sim;
  };
  /** Turns an API refusal (no published version, agent gone, conversation ended) into a non-retryable failure. */
  const nonRetryable = (err: unknown): never => {
    if (err instanceof ApiError && err.status < 500) throw ApplicationFailure.nonRetryable(err.message, err.code);
    const e = err as { name?: string; kind?: string; message?: string };
    if (e?.name === 'LlmProviderError' && (e.kind === 'bad_request' || e.kind === 'auth')) throw ApplicationFailure.nonRetryable(e.message ?? 'LLM error', `llm_${e.kind}`);
    throw err;
  };

  return {
    /** Starts (or finds) the simulated conversation. @returns its id */
    async startSimulationConversation(ref: SimulationRef): Promise<string> {
      const sim = await load(ref);
      const id = simulationConversationId(sim.id);
      if (!(await getConversation(db, ref.orgId, id))) {
        try {
          await startConversation(db, ref.orgId, {
            id,
            agentId: sim.agentId,
            channel: 'chat',
            draftMode: sim.request.draftMode === true,
            variables: sim.request.variables,
            metadata: { simulationId: sim.id },
            keyId: null,
            simulation: true,
            skillStubs: sim.request.skillStubs ?? {},
          });
        } catch (err) {
          if (!isUniqueViolation(err)) nonRetryable(err);
        }
      }
      await setSimulationProgress(db, ref.orgId, sim.id, { conversationId: id });
      return id;
    },

    /** Runs caller turn `turn` (from 1) unless it is stored already. @returns whether the conversation ended */
    async runSimulationTurn(input: SimulationRef & { turn: number }): Promise<{ ended: boolean }> {
      const sim = await load(input);
      const c = await getConversation(db, input.orgId, simulationConversationId(sim.id));
      if (!c) throw ApplicationFailure.nonRetryable('the simulated conversation was not started', 'conversation_not_found');
      if (c.turnCount >= input.turn || c.status !== 'active') return { ended: c.status !== 'active' };
      const transcript = (await allMessages(db, input.orgId, c.id)).map((m) => ({ role: m.role, content: m.content }) as LlmMessage);
      const text = sim.request.script ? sim.request.script[input.turn - 1] : await simulatedCallerMessage(conv().llm, sim.request.caller!, transcript);
      try {
        const out = await sendMessage(conv(), c, text);
        await setSimulationProgress(db, input.orgId, sim.id, { turns: input.turn });
        return { ended: out.conversation.status !== 'active' };
      } catch (err) {
        if (err instanceof ApiError && err.code === 'conversation_busy') throw err; // retried: the stored turn is found next time
        return nonRetryable(err);
      }
    },

    /** Judges the expectations, stores the verdicts and ends the conversation. */
    async completeAgentSimulation(ref: SimulationRef): Promise<{ passed: boolean }> {
      const sim = await load(ref);
      const id = simulationConversationId(sim.id);
      const results = evaluateExpectations(sim.request.expectations ?? [], await allMessages(db, ref.orgId, id), await turnReceipts(db, ref.orgId, id));
      const c = await getConversation(db, ref.orgId, id);
      if (c) await finishConversation(db, c, 'ended_by_api');
      await completeSimulation(db, ref.orgId, sim.id, results);
      return { passed: results.every((r) => r.passed) };
    },

    /** Marks the simulation failed with the reason. */
    async failAgentSimulation(input: SimulationRef & { error: string }): Promise<void> {
      await failSimulation(db, input.orgId, input.simulationId, input.error);
      const c = await getConversation(db, input.orgId, simulationConversationId(input.simulationId));
      if (c) await finishConversation(db, c, 'ended_by_api');
    },
  };
}

/** The simulation activities' types (for proxyActivities). */
export type SimulationActivities = ReturnType<typeof createSimulationActivities>;
