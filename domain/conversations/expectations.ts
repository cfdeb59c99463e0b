/**
 * Expectations of a simulated conversation (docs/api-notes.md "Conversations": `POST /agents/{agentId}/simulate`),
 * each judged on the whole conversation with the evidence that decided it:
 * - `mentions` / `doesNotMention`: an agent reply contains the text (case-insensitive);
 * - `callsSkill`: a turn's receipt has a call of the skill that did not fail;
 * - `reachesPlaybookNode`: a turn's receipt visited the node (of the named playbook, when given).
 * Pure functions.
 */
import type { ConversationMessage, ExpectationResult, SimulationExpectation, SimulationRequest, TurnReceipt } from '../../schemas/types/chat';

/** Default caller turns of a simulated caller. */
export const DEFAULT_SIMULATED_TURNS = 6;

/** Caller turns a simulation runs at most: the script's length, or the simulated caller's `maxTurns`. */
export function simulationTurns(req: SimulationRequest): number {
  return req.script ? req.script.length : (req.caller?.maxTurns ?? DEFAULT_SIMULATED_TURNS);
}

const excerpt = (s: string) => (s.length > 200 ? `${s.slice(0, 197)}…` : s);

/** Judges every expectation. @param messages the transcript, in order; @param receipts one per turn */
export function evaluateExpectations(expectations: readonly SimulationExpectation[], messages: readonly ConversationMessage[], receipts: readonly TurnReceipt[]): ExpectationResult[] {
  const replies = messages.filter((m) => m.role === 'assistant' && m.content);
  return expectations.map((e): ExpectationResult => {
    switch (e.type) {
      case 'mentions':
      case 'doesNotMention': {
        const hit = replies.find((m) => m.content!.toLowerCase().includes(e.text.toLowerCase()));
        if (e.type === 'mentions') {
          return hit
            ? { expectation: e, passed: true, evidence: `turn ${hit.turn} reply: "${excerpt(hit.content!)}"`, turn: hit.turn }
            : { expectation: e, passed: false, evidence: `none of ${replies.length} replies mentions "${e.text}"`, turn: null };
        }
        return hit
          ? { expectation: e, passed: false, evidence: `turn ${hit.turn} reply mentions it: "${excerpt(hit.content!)}"`, turn: hit.turn }
          : { expectation: e, passed: true, evidence: `none of ${replies.length} replies mentions "${e.text}"`, turn: null };
      }
      case 'callsSkill': {
        for (const r of receipts) {
          const call = r.toolCalls.find((c) => c.skill === e.skill && !c.error);
          if (call) return { expectation: e, passed: true, evidence: `turn ${r.turn} called ${e.skill} with ${JSON.stringify(call.inputs)}`, turn: r.turn };
        }
        const failed = receipts.flatMap((r) => r.toolCalls.filter((c) => c.skill === e.skill).map((c) => ({ turn: r.turn, error: c.error })));
        return failed.length
          ? { expectation: e, passed: false, evidence: `turn ${failed[0].turn} called ${e.skill} but it failed: ${failed[0].error}`, turn: failed[0].turn }
          : { expectation: e, passed: false, evidence: `${e.skill} was never called in ${receipts.length} turns`, turn: null };
      }
      case 'reachesPlaybookNode': {
        const r = receipts.find((x) => x.playbook && (!e.playbook || x.playbook.name === e.playbook) && x.playbook.nodes.includes(e.node));
        return r
          ? { expectation: e, passed: true, evidence: `turn ${r.turn} reached ${r.playbook!.name}.${e.node}`, turn: r.turn }
          : { expectation: e, passed: false, evidence: `no turn reached ${e.playbook ? `${e.playbook}.` : ''}${e.node}`, turn: null };
      }
    }
  });
}
