/**
 * What the model can see, per skill and for the caller lookup of caller verification — the pre-publish
 * report's `modelVisibility` (spec "Agent versions": the report says what data goes where; docs/security.md
 * "Sensitive record fields"). Pure: the organization's record rules come from the caller.
 */
import type { ModelVisibility, ReportWarning } from '../../schemas/types/prepublish';
import type { CompiledAgent } from './compile';
import { skillInputs, skillOutputSchema } from './skillTypes';
import { outputPaths } from './skillOutput';
import { approvalOf, type McpToolRule } from './mcp';
import { protectedSkill } from '../conversations/callerVerification';
import { DEFAULT_PIN_FIELD } from '../conversations/callerVerification';
import { SENSITIVE_NAME_WORDS, sensitiveName, type RecordRules } from '../records/sensitive';

/** The variables caller verification sets, which the model sees in its prompt (domain/conversations/callerVerification.ts). */
const VERIFICATION_SEES = ['caller_phone', 'caller_email', 'caller_verified', 'caller_verification', 'caller_record_id', 'caller_name', 'caller_pin_attempts'];

/** What a `lookup_record` match shows of `fields`: the declared non-sensitive fields, then the rule for the rest. */
function recordFieldPaths(rules: RecordRules, prefix: string): { sees: string[]; hidden: string[] } {
  const sees: string[] = [];
  const hidden: string[] = [];
  for (const [name, sensitive] of rules) (sensitive ? hidden : sees).push(`${prefix}.${name}`);
  sees.push(`${prefix}.* (undeclared fields, except those named like ${SENSITIVE_NAME_WORDS.slice(0, 4).join(', ')} or holding a card number)`);
  for (const w of SENSITIVE_NAME_WORDS) if (!rules.has(w)) hidden.push(`${prefix}.${w}`);
  hidden.push(`${prefix}.* holding a card number`);
  return { sees, hidden };
}

/**
 * One entry per skill (what its result shows the model, which inputs are filled server-side, whether a
 * verified caller is required), plus one for caller verification's Records lookup when it is on.
 */
export function modelVisibility(snapshot: CompiledAgent, rules: RecordRules): ModelVisibility[] {
  const cv = snapshot.callerVerification;
  const out: ModelVisibility[] = [];
  for (const s of snapshot.skills) {
    const config = s.config as Record<string, any>;
    const schema = skillOutputSchema(s.type, config);
    let sees = schema ? outputPaths(schema) : ['(entire output)'];
    let hidden: string[] = [];
    // An MCP server's tools each have their own output schema (./mcp.ts): listed per tool that can run.
    const mcpTools = s.type === 'mcp' && Array.isArray(config.tools) ? (config.tools as McpToolRule[]).filter((t) => approvalOf(t) !== 'never') : null;
    if (mcpTools) {
      sees = mcpTools.flatMap((t) => {
        const own = skillOutputSchema(s.type, config, t.name);
        return (own ? outputPaths(own) : ['(entire output)']).map((p) => `${t.name}: ${p}`);
      });
    }
    if (s.type === 'lookup_record') {
      const f = recordFieldPaths(rules, 'matches[].fields');
      sees = [...sees.filter((p) => p !== 'matches[].fields.*'), ...f.sees];
      hidden = f.hidden;
    }
    out.push({
      skill: s.name,
      type: s.type,
      modelSees: sees,
      hidden,
      filledServerSide: skillInputs(s.type, config)
        .map((i) => i.name)
        .filter((n) => sensitiveName(rules, n)),
      outputSchema: mcpTools ? mcpTools.length > 0 && mcpTools.every((t) => !!skillOutputSchema(s.type, config, t.name)) : !!schema,
      requiresVerifiedCaller: !!protectedSkill(cv, s),
    });
  }
  if (cv.enabled && (cv.method === 'caller_id' || cv.method === 'pin')) {
    const pinField = cv.pinField ?? DEFAULT_PIN_FIELD;
    out.push({
      skill: 'caller_verification',
      type: 'caller_verification',
      modelSees: VERIFICATION_SEES.filter((v) => cv.method === 'pin' || v !== 'caller_pin_attempts'),
      hidden: cv.method === 'pin' ? [pinField] : [],
      filledServerSide: [],
      outputSchema: true,
      requiresVerifiedCaller: cv.method === 'pin',
    });
  }
  return out;
}

/** A warning when method `pin` reads a PIN field the record rules do not make sensitive (stored and shown in plain text). */
export function pinFieldWarnings(snapshot: CompiledAgent, rules: RecordRules): ReportWarning[] {
  const cv = snapshot.callerVerification;
  const pinField = cv.pinField ?? DEFAULT_PIN_FIELD;
  if (!cv.enabled || cv.method !== 'pin' || sensitiveName(rules, pinField)) return [];
  return [
    {
      code: 'pin_field_not_sensitive',
      field: 'callerVerification.pinField',
      message: `Records store "${pinField}" in plain text and show it to readers and the model: declare it sensitive with PUT /record-schema`,
    },
  ];
}
