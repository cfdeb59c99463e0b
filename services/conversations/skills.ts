/**
 * Skills executed as tools by the conversation runtime (docs/api-notes.md "Conversations", "Skill types"):
 * - `http_request`: the configured method and HTTPS URL with the inputs as a JSON body (query for GET),
 *   through the SSRF-guarded skill client with the skill's `timeoutMs`; a non-2xx answer is a failure;
 * - `send_sms`: the template filled from the conversation's variables, sent from the agent's SMS-enabled
 *   number through `sms-message/{id}` with every SMS rule (services/sms/send.ts); `to: caller` is the
 *   conversation's `caller_phone` variable (or `phone`);
 * - `book_appointment` and `check_availability` with `url`: the booking and availability contracts of
 *   ./booking.ts (docs/api-notes.md "Booking skills"), each booking once (./booking.ts `bookOnce`); a failure is
 *   never a confirmation;
 * - `transfer_call`, `end_call`: a transfer recorded and the conversation ended as `transferred`, the conversation
 *   ended with the configured closing line;
 * - provisioned skills (docs/api-notes.md "Integrations and records"): `book_appointment` and `check_availability` with
 *   `integration` use the connected calendar, `http_request` with `integration: http` adds the connection's sealed
 *   Authorization header, `lookup_record` searches the organization's Records (every read audited);
 * - `mcp`: the called tool of the skill's MCP server, after its approval policy allowed it (./mcp.ts `runMcpTool`);
 * - every skill: sensitive record fields it declares as inputs are filled server-side, and only the members
 *   of its output schema reach the model (./boundary.ts);
 * - a conversation with skill stubs (every simulation and evaluation; docs/evals.md "Skill stubs"): a stubbed skill
 *   answers its canned output, a skill that only acts on the conversation runs, and any other skill fails with
 *   `skill_not_stubbed` before anything is sent: such a conversation never reaches a real endpoint.
 */
import type { Client } from '@temporalio/client';
import type { Db } from '../../db';
import { getAgentNumberForSms } from '../../db/repositories/numbers';
import { renderTemplate } from '../../domain/conversations/playbook';
import { SkillError, type SkillCall, type SkillOutcome } from '../../domain/conversations/runtime';
import { ApiError } from '../../domain/errors';
import type { SkillHttpClient } from '../../providers/http/request';
import { queueText } from '../sms/send';
import { transferDestination, withSecretValues } from '../settings/references';
import { integrationHeaders, runIntegrationSkill } from '../integrations/skills';
import { boundedOutcome, fillSensitiveInputs } from './boundary';
import { runMcpTool } from './mcp';
import { sharedMcpProvider, type McpProvider } from '../../providers/mcp';
import type { McpSkillConfig } from '../../domain/agents/mcp';
import { skillNeedsStub } from '../../domain/conversations/skillStubs';
import { availabilityThroughUrl, bookThroughUrl } from './booking';
import type { FaultHook } from '../effects';

/** What skills need from the outside. */
export interface SkillDeps {
  db: Db;
  temporal?: { client: Client; taskQueue: string };
  http: SkillHttpClient;
  /** The MCP client of `mcp` skills (providers/mcp); absent: the process's shared one. */
  mcp?: McpProvider;
  /** The conversation's skill stubs (ConversationRecord `skillStubs`); given (even `{}`): no real endpoint is called. */
  stubs?: Record<string, unknown> | null;
  /** Tests only: crash points of a booking write (../effects.ts `performOnce`). */
  faults?: FaultHook;
}

/**
 * Builds the runtime's `runSkill` port: sensitive inputs filled from the verified caller's record right
 * before the call, and the outcome cut to the skill's output schema (./boundary.ts; docs/security.md "Sensitive record fields").
 */
export function createSkillRunner(deps: SkillDeps): (call: SkillCall) => Promise<SkillOutcome> {
  const run = deps.stubs ? stubbedRunner(deps.stubs, skillRunner(deps)) : skillRunner(deps);
  return async (given) => {
    const { call, filled } = await fillSensitiveInputs(deps.db, given);
    return boundedOutcome(call, await run(call), filled);
  };
}

/**
 * The runner of a conversation with stubs: a skill that reaches outside (domain/conversations/skillStubs.ts) answers
 * its stub or fails with `skill_not_stubbed` and never runs; the others run, answering their stub when given.
 */
function stubbedRunner(stubs: Record<string, unknown>, run: (call: SkillCall) => Promise<SkillOutcome>): (call: SkillCall) => Promise<SkillOutcome> {
  return async (call) => {
    const stubbed = Object.prototype.hasOwnProperty.call(stubs, call.skill.name);
    if (skillNeedsStub({ type: call.skill.type, config: call.skill.config })) {
      if (!stubbed) throw new SkillError(`Skill "${call.skill.name}" has no stub in this simulation; it was not called`, 'skill_not_stubbed');
      return { output: stubs[call.skill.name] };
    }
    const outcome = await run(call);
    return stubbed ? { ...outcome, output: stubs[call.skill.name] } : outcome;
  };
}

function skillRunner(deps: SkillDeps): (call: SkillCall) => Promise<SkillOutcome> {
  return async (call) => {
    let config: Record<string, any>;
    try {
      config = await withSecretValues(deps.db, call.conversation.orgId, call.skill.config as Record<string, any>);
    } catch (err) {
      throw new SkillError((err as Error).message, 'variable_unavailable');
    }
    const calendarSkill = call.skill.type === 'book_appointment' || call.skill.type === 'check_availability';
    if (call.skill.type === 'lookup_record' || (calendarSkill && config.integration)) return runIntegrationSkill(deps.db, call, deps.faults);
    switch (call.skill.type) {
      case 'http_request': {
        const headers = config.integration ? { ...config.headers, ...(await integrationHeaders(deps.db, call.conversation.orgId)) } : config.headers;
        const res = await deps.http
          .send({ method: config.method, url: config.url, headers, json: call.args, timeoutMs: config.timeoutMs ?? 10_000 })
          .catch((err: Error & { code?: string }) => {
            throw new SkillError(err.message, err.code ?? 'http_failed');
          });
        if (res.status < 200 || res.status >= 300) throw new SkillError(`${new URL(config.url).host} answered HTTP ${res.status}`, 'http_status');
        return { output: res.body };
      }
      case 'send_sms': {
        const vars = { ...call.conversation.variables, ...call.args };
        const to = config.to === 'caller' ? (vars.caller_phone ?? vars.phone) : config.to;
        if (!to) throw new SkillError('No number to text: the conversation has no caller_phone variable', 'no_recipient');
        const from = await getAgentNumberForSms(deps.db, call.conversation.orgId, call.conversation.agentId);
        if (!from) throw new SkillError('The agent has no SMS-enabled number', 'number_not_found');
        try {
          const m = await queueText(deps.db, deps.temporal, call.conversation.orgId, { from, to, body: renderTemplate(config.template, vars), trigger: 'agent' });
          return { output: { messageId: m.id, status: m.status, heldUntil: m.heldUntil } };
        } catch (err) {
          if (err instanceof ApiError) throw new SkillError(err.message, err.code);
          throw err;
        }
      }
      case 'book_appointment':
        return bookThroughUrl(deps.db, deps.http, call, config, deps.faults);
      case 'check_availability':
        return availabilityThroughUrl(deps.http, call, config, Date.now());
      case 'transfer_call': {
        const dest = await transferDestination(deps.db, call.conversation.orgId, config);
        if (config.destinationId && !dest) throw new SkillError(`Escalation destination ${config.destinationId} no longer exists`, 'destination_not_found');
        const to = dest ? { to: dest.address, destinationId: dest.id, kind: dest.kind, openNow: dest.openNow } : { to: config.phoneNumber };
        return { output: { status: 'transferring', ...to }, effect: 'transfer', say: 'Transferring you to a member of our team now.' };
      }
      case 'mcp':
        return runMcpTool(deps.mcp ?? sharedMcpProvider(), call, config as McpSkillConfig);
      case 'end_call':
        return { output: { status: 'ended' }, effect: 'end', say: config.closingLine || 'Thank you, goodbye.' };
      default:
        throw new SkillError(`Skill type "${call.skill.type}" cannot run`, 'unknown_skill');
    }
  };
}
