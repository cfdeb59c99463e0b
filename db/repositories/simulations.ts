/**
 * Agent simulations (docs/api-notes.md "Conversations"; migration 20261123000200_agent_simulations): the request,
 * the simulated conversation, progress and the verdicts. Every function takes the organization id.
 */
import type { Db } from '../index';
import { newId } from '../ids';
import { iso } from '../timestamps';
import type { Conn } from './agents';
import type { ExpectationResult, Simulation, SimulationRequest } from '../../schemas/types/chat';

/** A stored simulation (without its transcript). */
export interface SimulationRecord extends Omit<Simulation, 'transcript'> {
  request: SimulationRequest;
}

function toRecord(r: any): SimulationRecord {
  return {
    id: r.id,
    agentId: r.agent_id,
    conversationId: r.conversation_id ?? null,
    mode: r.request?.draftMode ? 'draft' : 'published',
    status: r.status,
    turns: r.turns,
    passed: r.passed ?? null,
    results: r.results ?? [],
    error: r.error ?? null,
    createdAt: iso(r.created_at),
    completedAt: iso(r.completed_at),
    request: r.request,
  };
}

/** The conversation id a simulation runs (deterministic, so a retried start finds the same conversation). */
export function simulationConversationId(simulationId: string): string {
  return `cnv_${simulationId.slice('sim_'.length)}`;
}

/** Stores a new simulation (`running`). */
export async function createSimulation(db: Db, orgId: string, agentId: string, request: SimulationRequest): Promise<SimulationRecord> {
  const [row] = await db('agent_simulations').insert({ id: newId('sim'), org_id: orgId, agent_id: agentId, request: JSON.stringify(request) }).returning('*');
  return toRecord(row);
}

/** One simulation of the organization (of the agent, when given), or undefined. */
export async function getSimulation(conn: Conn, orgId: string, id: string, agentId?: string): Promise<SimulationRecord | undefined> {
  const r = await conn('agent_simulations').where({ org_id: orgId, id, ...(agentId ? { agent_id: agentId } : {}) }).first();
  return r ? toRecord(r) : undefined;
}

/** Records the simulated conversation and the caller turns run so far. */
export async function setSimulationProgress(db: Db, orgId: string, id: string, progress: { conversationId?: string; turns?: number }): Promise<void> {
  await db('agent_simulations')
    .where({ org_id: orgId, id, status: 'running' })
    .update({ ...(progress.conversationId ? { conversation_id: progress.conversationId } : {}), ...(progress.turns !== undefined ? { turns: progress.turns } : {}) });
}

/** Completes a running simulation with its verdicts (a completed or failed one is left as it is). */
export async function completeSimulation(db: Db, orgId: string, id: string, results: ExpectationResult[]): Promise<void> {
  await db('agent_simulations')
    .where({ org_id: orgId, id, status: 'running' })
    .update({ status: 'completed', results: JSON.stringify(results), passed: results.every((r) => r.passed), completed_at: db.fn.now() });
}

/** Fails a running simulation with the reason. */
export async function failSimulation(db: Db, orgId: string, id: string, error: string): Promise<void> {
  await db('agent_simulations').where({ org_id: orgId, id, status: 'running' }).update({ status: 'failed', error: error.slice(0, 2000), completed_at: db.fn.now() });
}
