/**
 * Agent simulation (DESIGN.md "Durable processes": id `agent-simulation/{id}`, started by
 * `POST /agents/{agentId}/simulate`): starts the simulated conversation, runs the caller turns one activity
 * each (so a restart resumes at the next turn), stops early when the conversation ends, then judges the
 * expectations. A refusal (agent gone, model refusing) fails the simulation with its reason.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { SimulationActivities, SimulationRef } from '../activities/simulations';
import { RETRY } from './retryPolicies';

const acts = proxyActivities<SimulationActivities>({ startToCloseTimeout: '2 minutes', retry: RETRY.standard });

/** Input of the simulation workflow: the simulation and how many caller turns it runs at most. */
export interface AgentSimulationInput extends SimulationRef {
  turns: number;
}

/** Runs one simulation to its verdict. @returns whether every expectation passed (false when it failed) */
export async function agentSimulation(input: AgentSimulationInput): Promise<{ passed: boolean }> {
  const ref = { orgId: input.orgId, simulationId: input.simulationId };
  try {
    await acts.startSimulationConversation(ref);
    for (let turn = 1; turn <= input.turns; turn++) {
      const { ended } = await acts.runSimulationTurn({ ...ref, turn });
      if (ended) break;
    }
    return await acts.completeAgentSimulation(ref);
  } catch (err) {
    const cause = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause : undefined;
    await acts.failAgentSimulation({ ...ref, error: cause ? `${cause.type ?? 'failed'}: ${cause.message}` : String((err as Error).message ?? err) });
    return { passed: false };
  }
}
