/**
 * Agent publish (DESIGN.md "Durable processes": id `agent-publish/{agentId}/{idempotencyKey}`, started by
 * `POST /agents/{id}/publish`). One step: compile the draft into a frozen version and publish it. The
 * deterministic id makes a retry with the same Idempotency-Key find this workflow (or, once it has
 * closed, start a run whose activity replays the stored version).
 */
import { proxyActivities } from '@temporalio/workflow';
import type { AgentActivities, AgentPublishInput, PublishOutcome } from '../activities/agents';
import { RETRY } from './retryPolicies';

const { compileAndPublishAgent } = proxyActivities<AgentActivities>({
  startToCloseTimeout: '1 minute',
  // The HTTP handler awaits this workflow, so transient failures are retried briefly (about 15 s in all).
  retry: RETRY.compile,
});

/** Result of the publish workflow (see PublishOutcome). */
export type AgentPublishResult = PublishOutcome;

/** Compiles and publishes one agent draft. */
export async function agentPublishWorkflow(input: AgentPublishInput): Promise<AgentPublishResult> {
  return compileAndPublishAgent(input);
}
