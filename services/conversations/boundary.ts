/**
 * What the model may see of the organization's records and of a skill's answer (docs/security.md
 * "Sensitive record fields"; OWASP ASVS V8.3, "Top 10 for LLM Applications" LLM02 sensitive information
 * disclosure). Three rules, applied around the pure runtime without changing it:
 * - a skill input named like a sensitive record field (domain/records/sensitive.ts `sensitiveName`) is not
 *   offered to the model as a tool parameter ({@link hideSensitiveParameters});
 * - such an input is filled when the skill runs from the verified caller's record, opened server-side
 *   ({@link fillSensitiveInputs}), the way `{{vars.<name>}}` secrets are (services/settings/references.ts);
 * - a skill's output reaches the model (and the receipt, and a playbook's variables) only through the
 *   members its output schema declares (domain/agents/skillOutput.ts), and with any filled value masked.
 */
import type { Db } from '../../db';
import { skillInputs, skillOutputSchema } from '../../domain/agents/skillTypes';
import { projectOutput } from '../../domain/agents/skillOutput';
import type { LlmProvider, LlmRequest, LlmTool } from '../../domain/conversations/llm';
import { SkillError, type SkillCall, type SkillOutcome } from '../../domain/conversations/runtime';
import { maskValue, sensitiveName, type RecordRules } from '../../domain/records/sensitive';
import { recordSchemaRules } from '../../db/repositories/records';
import { openRecordField } from '../records/sealing';

/** The tools of a request without their sensitive parameters (names and `required` both). */
function withoutSensitive(tools: readonly LlmTool[], rules: RecordRules): LlmTool[] {
  return tools.map((t) => {
    const p = t.parameters as { properties?: Record<string, unknown>; required?: string[] };
    const names = Object.keys(p?.properties ?? {});
    if (!names.some((n) => sensitiveName(rules, n))) return t;
    return {
      ...t,
      parameters: {
        ...p,
        properties: Object.fromEntries(Object.entries(p.properties!).filter(([n]) => !sensitiveName(rules, n))),
        required: (p.required ?? []).filter((n) => !sensitiveName(rules, n)),
      },
    };
  });
}

/**
 * The LLM port of one conversation's turns with sensitive tool parameters left out of every request.
 * @param rules loads the organization's record rules (called at most once)
 */
export function hideSensitiveParameters(llm: LlmProvider, rules: () => Promise<RecordRules>): LlmProvider {
  let loaded: Promise<RecordRules> | undefined;
  const prepare = async (req: LlmRequest): Promise<LlmRequest> => {
    if (!req.tools?.length) return req;
    return { ...req, tools: withoutSensitive(req.tools, await (loaded ??= rules())) };
  };
  return {
    name: llm.name,
    complete: async (req) => llm.complete(await prepare(req)),
    stream: async function* (req) {
      yield* llm.stream(await prepare(req));
    },
  };
}

/** {@link hideSensitiveParameters} reading the organization's rules from Postgres. */
export function modelFacingLlm(db: Db, orgId: string, llm: LlmProvider): LlmProvider {
  return hideSensitiveParameters(llm, () => recordSchemaRules(db, orgId));
}

/**
 * The call with its sensitive inputs filled from the verified caller's record (`caller_record_id` once
 * `caller_verified` is `true`), in a copy of the arguments (the receipt keeps the arguments as given). An
 * input the record lacks keeps a value the call already carries (a playbook gathered it from the caller).
 * @returns the call to run and the values filled (to mask in the output)
 * @throws SkillError `sensitive_input_unavailable` when a required sensitive input has no value
 */
export async function fillSensitiveInputs(db: Db, call: SkillCall): Promise<{ call: SkillCall; filled: string[] }> {
  const inputs = skillInputs(call.skill.type, call.skill.config as Record<string, any>);
  if (!inputs.length) return { call, filled: [] };
  const rules = await recordSchemaRules(db, call.conversation.orgId);
  const sensitive = inputs.filter((i) => sensitiveName(rules, i.name));
  if (!sensitive.length) return { call, filled: [] };
  const vars = call.conversation.variables;
  const recordId = vars.caller_verified === 'true' ? vars.caller_record_id : undefined;
  const args = { ...call.args };
  const filled: string[] = [];
  for (const input of sensitive) {
    const value = recordId ? await openRecordField(db, call.conversation.orgId, recordId, input.name) : undefined;
    if (value !== undefined && value !== '') {
      args[input.name] = value;
      filled.push(value);
    } else if (!args[input.name] && input.required) {
      throw new SkillError(
        recordId
          ? `Skill "${call.skill.name}" needs ${input.name}, which the verified caller's record does not have`
          : `Skill "${call.skill.name}" needs ${input.name} from a verified caller's record; the caller is not verified`,
        'sensitive_input_unavailable',
      );
    }
  }
  return { call: { ...call, args }, filled };
}

/** `value` with every occurrence of the `secrets` (3 characters or more) in its strings replaced by their mask. */
export function maskValues(value: unknown, secrets: readonly string[]): unknown {
  const list = secrets.filter((s) => s.length >= 3);
  if (!list.length) return value;
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return list.reduce((acc, s) => acc.split(s).join(maskValue(s)), v);
    if (Array.isArray(v)) return v.map(walk);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
    return v;
  };
  return walk(value);
}

/** The outcome as the model, the receipt and the playbook see it: its output cut to the output schema, filled values masked. */
export function boundedOutcome(call: SkillCall, outcome: SkillOutcome, filled: readonly string[]): SkillOutcome {
  const schema = skillOutputSchema(call.skill.type, call.skill.config as Record<string, any>, call.tool?.name);
  const output = schema ? projectOutput(schema, outcome.output) : outcome.output;
  return { ...outcome, output: maskValues(output, filled) };
}
