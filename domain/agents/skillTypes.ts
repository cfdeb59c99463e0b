/**
 * The skill type catalogue (`GET /skill-types`): one JSON Schema per type for the skill's `config`,
 * validated with ajv, plus what each type needs from the conversation (its inputs) and where it sends
 * data (the pre-publish report's "data leaving the system"). Spec: Skills rows; a skill is one atomic
 * action (one API call, one step).
 */
import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { FieldError } from '../errors';
import { toFieldErrors } from '../validation';
import { isOutputSchema, type OutputSchema } from './skillOutput';
import { plainHttpPolicy, plainHttpProblem } from '../net/plainHttp';
import { approvalOf, MCP_DEFAULT_TIMEOUT_MS, mcpConfigErrors, mcpToolRule, type McpSkillConfig } from './mcp';
import { isIP } from 'node:net';
import { checkAddress } from '../net/guard';
import { isTimeZone } from '../settings/hours';

/** One input a skill needs from the conversation. */
export interface SkillInput {
  name: string;
  required: boolean;
}

/** Where a skill's data goes and what it carries. */
export interface SkillDataFlow {
  /** URL host, E.164 number, or `caller`; null when nothing leaves the system. */
  destination: string | null;
  fields: string[];
}

/** A catalogue entry. */
export interface SkillTypeDef {
  type: string;
  name: string;
  description: string;
  configSchema: Record<string, unknown>;
  sendsData: boolean;
  /** Inputs the skill reads from the conversation, given a valid config. */
  inputs(config: Record<string, any>): SkillInput[];
  /** Outbound data flow, given a valid config. */
  dataFlow(config: Record<string, any>): SkillDataFlow;
  /** Checks the schema cannot express, given a config the schema accepted (fields relative to the config). */
  check?(config: Record<string, any>): FieldError[];
  /**
   * The shape of the skill's output, given a valid config, or undefined when it has none (then the whole
   * output reaches the model). Only the members it declares reach the model and the receipt
   * (domain/agents/skillOutput.ts; docs/security.md "Sensitive record fields").
   */
  output?(config: Record<string, any>, tool?: string): OutputSchema | undefined;
  /**
   * The skill offers the tools its server lists (`mcp`: ./mcp.ts), each a tool of its own, instead of one tool
   * with its inputs; the runtime gets them through `TurnPorts.remoteTools`.
   */
  remoteTools?: boolean;
}

const INPUT_NAME = '^[a-z][a-z0-9_]{0,63}$';
const E164 = '^\\+[1-9][0-9]{6,14}$';

const inputsSchema = {
  type: 'array',
  maxItems: 50,
  description: 'Conversation variables sent with the request.',
  items: {
    type: 'object',
    additionalProperties: false,
    required: ['name'],
    properties: {
      name: { type: 'string', pattern: INPUT_NAME },
      required: { type: 'boolean', default: true },
      description: { type: 'string', maxLength: 500 },
    },
  },
};

/** `url` must be https, or plain http to a host of HTTP_ALLOW_PRIVATE_HOSTS outside production (../net/plainHttp.ts). */
const urlErrors = (url: unknown): FieldError[] => {
  const problem = typeof url === 'string' ? plainHttpProblem(url, plainHttpPolicy()) : null;
  return problem ? [{ field: 'url', message: problem }] : [];
};

/**
 * A booking endpoint written as a non-public address (or `localhost`) must be listed in HTTP_ALLOW_PRIVATE_HOSTS
 * whatever the scheme: the SSRF guard (../net/guard.ts) would refuse every call, and every booking would fail.
 */
const privateHostErrors = (url: unknown): FieldError[] => {
  if (typeof url !== 'string') return [];
  let host: string;
  try {
    host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  } catch {
    return [];
  }
  if (host === 'localhost' || host.endsWith('.localhost')) return [{ field: 'url', message: 'must not be localhost: write the address (e.g. 127.0.0.1) and list it in HTTP_ALLOW_PRIVATE_HOSTS (local development)' }];
  if (!isIP(host)) return [];
  const verdict = checkAddress(host, plainHttpPolicy().allow);
  return verdict.allowed ? [] : [{ field: 'url', message: `must reach a public address: ${verdict.reason}, not listed in HTTP_ALLOW_PRIVATE_HOSTS` }];
};

/**
 * A skill's `config` schema: a closed JSON Schema object (a member it does not declare is an error) with its
 * `required` members (none: no `required` keyword) and further keywords such as `oneOf`, then `properties`.
 */
const skillConfig = (required: readonly string[], properties: Record<string, unknown>, keywords: Record<string, unknown> = {}): Record<string, unknown> => ({
  type: 'object',
  additionalProperties: false,
  ...(required.length ? { required } : {}),
  ...keywords,
  properties,
});

/** An endpoint a skill calls: an absolute http(s) URI of at most 2,000 characters (the https rule is `urlErrors`). */
const endpointUrl = (description: string) => ({ type: 'string', format: 'uri', pattern: '^https?://', maxLength: 2000, description });

/** Opening hours of calendar skills (domain/booking/slots.ts): `HH:MM` local times, ISO weekdays. */
const openHoursSchema = {
  type: 'object',
  additionalProperties: false,
  description: 'When slots may be offered (Google Calendar and url availability), in `timeZone`; default 09:00–17:00, Monday to Friday.',
  properties: {
    from: { type: 'string', pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$', default: '09:00' },
    until: { type: 'string', pattern: '^([01][0-9]|2[0-3]):[0-5][0-9]$|^24:00$', default: '17:00' },
    days: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'integer', minimum: 1, maximum: 7 }, description: 'ISO weekdays, 1 = Monday … 7 = Sunday.', default: [1, 2, 3, 4, 5] },
  },
};

/** Checks shared by the calendar skills: the url, a known time zone, Cal.com's event type, opening hours in order. */
const calendarChecks = (c: Record<string, any>): FieldError[] => [
  ...(urlErrors(c.url).length ? urlErrors(c.url) : privateHostErrors(c.url)),
  ...(typeof c.timeZone === 'string' && !isTimeZone(c.timeZone) ? [{ field: 'timeZone', message: 'must be an IANA time zone, e.g. America/Chicago' }] : []),
  ...(c.integration === 'calcom' && c.eventTypeId === undefined ? [{ field: 'eventTypeId', message: 'is required with integration calcom: the Cal.com event type' }] : []),
  ...(c.openHours?.from && c.openHours?.until && c.openHours.from >= c.openHours.until ? [{ field: 'openHours.until', message: 'must be after openHours.from' }] : []),
];

/** What tells the two calendar skills' configs apart: their descriptions and their own fields. */
interface CalendarConfigParts {
  /** What the `url` endpoint is, e.g. `Booking endpoint`. */
  url: string;
  integration: string;
  eventTypeId: string;
  /** How `timeZone` is used, after "IANA time zone of the business, e.g. America/Chicago: ". */
  timeZone: string;
  timeoutMs: string;
  /** The skill's own properties, placed between `timeZone` and `timeoutMs`. */
  extra: Record<string, unknown>;
}

/**
 * The config schema of a calendar skill (`book_appointment`, `check_availability`): a `url` or a connected
 * calendar (`integration`), the slot length in minutes, the business's time zone and a request cap in ms,
 * plus the skill's own fields (docs/api-notes.md "Booking skills").
 */
const calendarConfigSchema = (parts: CalendarConfigParts): Record<string, unknown> =>
  skillConfig(
    ['durationMinutes', 'timeZone'],
    {
      url: endpointUrl(`${parts.url} (HTTPS; plain http only to HTTP_ALLOW_PRIVATE_HOSTS outside production); or \`integration\` instead.`),
      integration: { enum: ['google_calendar', 'calcom'], description: parts.integration },
      calendarId: { type: 'string', minLength: 1, maxLength: 200, description: 'Google Calendar: calendar of the connected account (default `primary`).' },
      eventTypeId: { type: 'integer', minimum: 1, description: parts.eventTypeId },
      durationMinutes: { type: 'integer', minimum: 5, maximum: 480 },
      timeZone: { type: 'string', minLength: 1, maxLength: 64, description: `IANA time zone of the business, e.g. America/Chicago: ${parts.timeZone}` },
      ...parts.extra,
      timeoutMs: { type: 'integer', minimum: 500, maximum: 30000, default: 10000, description: parts.timeoutMs },
    },
    { oneOf: [{ required: ['url'] }, { required: ['integration'] }] },
  );

/** Where a calendar skill's data goes: the endpoint's host, or the integration's API host. */
const calendarDestination = (c: Record<string, any>): string | null => (c.integration === 'google_calendar' ? 'www.googleapis.com' : c.integration === 'calcom' ? 'api.cal.com' : hostOf(c.url));

const hostOf = (url: unknown): string | null => {
  try {
    return new URL(String(url)).host || null;
  } catch {
    return null;
  }
};

const placeholders = (text: unknown): string[] =>
  [...new Set([...String(text ?? '').matchAll(/\{\{\s*([A-Za-z][A-Za-z0-9_]*)\s*\}\}/g)].map((m) => m[1]))];

/** An output schema of scalar members. */
const objectOf = (names: string[]): OutputSchema => ({ type: 'object', properties: Object.fromEntries(names.map((n) => [n, {}])) });

const declaredInputs = (config: Record<string, any>): SkillInput[] =>
  (Array.isArray(config.inputs) ? config.inputs : []).map((i: any) => ({ name: String(i.name), required: i.required !== false }));

/** Every skill type, by `type`. */
export const SKILL_TYPES: readonly SkillTypeDef[] = [
  {
    type: 'http_request',
    name: 'HTTP request',
    description: 'Calls one HTTPS endpoint with conversation variables as a JSON body (or query for GET) and reads the JSON answer.',
    sendsData: true,
    configSchema: skillConfig(['url', 'method'], {
      url: endpointUrl('HTTPS endpoint (plain http only to HTTP_ALLOW_PRIVATE_HOSTS outside production).'),
      method: { type: 'string', enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] },
      headers: {
        type: 'object',
        maxProperties: 20,
        additionalProperties: { type: 'string', maxLength: 1000 },
        description: 'Static request headers (secrets belong in integrations, not here).',
      },
      inputs: inputsSchema,
      timeoutMs: { type: 'integer', minimum: 500, maximum: 30000, default: 10000 },
      integration: { const: 'http', description: "Set by provisioning: the connection's sealed Authorization header is added at run time (docs/api-notes.md \"Integrations and records\")." },
      outputSchema: {
        type: 'object',
        description:
          'JSON Schema of the answer (type, properties, additionalProperties, items): only the members it declares reach the model and the receipt. Absent: the whole answer does (docs/security.md "Sensitive record fields").',
      },
    }),
    check: (c) => [
      ...urlErrors(c.url),
      ...(c.outputSchema !== undefined && !isOutputSchema(c.outputSchema) ? [{ field: 'outputSchema', message: 'must be a JSON Schema object (properties, items and additionalProperties schemas themselves)' }] : []),
    ],
    output: (c) => (isOutputSchema(c.outputSchema) ? c.outputSchema : undefined),
    inputs: declaredInputs,
    dataFlow: (c) => ({ destination: hostOf(c.url), fields: declaredInputs(c).map((i) => i.name) }),
  },
  {
    type: 'book_appointment',
    name: 'Book appointment',
    description:
      "Books a slot with the caller's name, phone and the chosen start time: POSTs the booking contract to `url` (docs/api-notes.md \"Booking skills\"), or books on the connected calendar (`integration`). A failed booking is never confirmed.",
    sendsData: true,
    configSchema: calendarConfigSchema({
      url: 'Booking endpoint',
      integration: 'Books on the connected calendar instead of `url` (set by provisioning).',
      eventTypeId: 'Cal.com: the event type bookings are made for (required with integration calcom).',
      timeZone: 'times are said in it.',
      timeoutMs: 'Cap on the booking request (url), ms; no answer in time is a failed booking.',
      extra: { collectNotes: { type: 'boolean', default: false, description: 'Also send free-text notes from the caller.' } },
    }),
    check: calendarChecks,
    inputs: (c) => [
      { name: 'name', required: true },
      { name: 'phone', required: true },
      { name: 'start_time', required: true },
      { name: 'email', required: false },
      ...(c.collectNotes ? [{ name: 'notes', required: false }] : []),
    ],
    dataFlow: (c) => ({ destination: calendarDestination(c), fields: ['name', 'phone', 'email', 'start_time', ...(c.collectNotes ? ['notes'] : [])] }),
    output: () => objectOf(['bookingId', 'status', 'startTime', 'endTime', 'durationMinutes', 'timeZone']),
  },
  {
    type: 'check_availability',
    name: 'Check availability',
    description:
      'Finds free slots to offer before booking: POSTs the availability contract to `url` (docs/api-notes.md "Booking skills"), or reads the connected calendar (`integration`: Google Calendar free/busy inside opening hours, Cal.com slots).',
    sendsData: true,
    configSchema: calendarConfigSchema({
      url: 'Availability endpoint',
      integration: 'Reads the connected calendar instead of `url`.',
      eventTypeId: 'Cal.com: the event type whose slots are read (required with integration calcom).',
      timeZone: 'slots are said in it.',
      timeoutMs: 'Cap on the availability request (url), ms.',
      extra: {
        openHours: openHoursSchema,
        windowDays: { type: 'integer', minimum: 1, maximum: 31, default: 7, description: 'Without a `date`, how many days ahead are searched.' },
        maxSlots: { type: 'integer', minimum: 1, maximum: 20, default: 5, description: 'Most slots answered.' },
      },
    }),
    check: calendarChecks,
    inputs: () => [{ name: 'date', required: false }],
    dataFlow: (c) => ({ destination: calendarDestination(c), fields: ['date'] }),
    output: () => ({
      type: 'object',
      properties: { available: {}, slotCount: {}, nextSlot: {}, timeZone: {}, slots: { type: 'array', items: { type: 'object', properties: { start: {}, end: {} } } } },
    }),
  },
  {
    type: 'lookup_record',
    name: 'Look up customer record',
    description: "Finds the caller's record among the organization's Records (synced from a spreadsheet or CRM, imported or created) by phone, email or name.",
    sendsData: false,
    configSchema: skillConfig([], {
      integration: { enum: ['google_sheets', 'hubspot'], description: 'Only records synced from this integration (set by provisioning); absent: every record.' },
      matchOn: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: ['phone', 'email', 'name'] }, default: ['phone', 'email', 'name'] },
      maxResults: { type: 'integer', minimum: 1, maximum: 10, default: 3 },
    }),
    inputs: (c) => (Array.isArray(c.matchOn) ? c.matchOn : ['phone', 'email', 'name']).map((name: string) => ({ name, required: false })),
    dataFlow: () => ({ destination: null, fields: [] }),
    // Sensitive record fields are left out of `fields` before this applies (services/integrations/skills.ts).
    output: () => ({
      type: 'object',
      properties: {
        matchedOn: { type: 'string' },
        matches: { type: 'array', items: { type: 'object', properties: { id: { type: 'string' }, name: { type: 'string' }, phone: { type: 'string' }, email: { type: 'string' }, fields: { type: 'object', additionalProperties: { type: 'string' } } } } },
      },
    }),
  },
  {
    type: 'send_sms',
    name: 'Send text message',
    description: "Texts the caller (or a fixed number) from the organization's number; `{{variable}}` placeholders are filled from the conversation.",
    sendsData: true,
    configSchema: skillConfig(['to', 'template'], {
      to: { type: 'string', description: '`caller` or an E.164 number.', anyOf: [{ const: 'caller' }, { pattern: E164 }] },
      template: { type: 'string', minLength: 1, maxLength: 1600 },
    }),
    inputs: (c) => placeholders(c.template).map((name) => ({ name, required: true })),
    dataFlow: (c) => ({ destination: c.to === 'caller' ? 'caller' : String(c.to), fields: placeholders(c.template) }),
    output: () => objectOf(['messageId', 'status', 'heldUntil']),
  },
  {
    type: 'transfer_call',
    name: 'Transfer call',
    description:
      'Transfers the live call to an escalation destination (`destinationId`, docs/api-notes.md "Variables, escalation, onboarding, meta and settings") or a phone number, optionally announcing a summary to the person answering.',
    sendsData: true,
    configSchema: skillConfig([], {
      destinationId: { type: 'string', pattern: '^esc_[A-Za-z0-9]{10,40}$', description: 'Escalation destination (`esc_…`) of the organization.' },
      phoneNumber: { type: 'string', pattern: E164, description: 'E.164 destination (when no destinationId is given).' },
      announceSummary: { type: 'boolean', default: false },
    }),
    check: (c) =>
      (c.destinationId === undefined) === (c.phoneNumber === undefined)
        ? [{ field: 'destinationId', message: 'exactly one of destinationId and phoneNumber is required' }]
        : [],
    inputs: () => [],
    dataFlow: (c) => ({ destination: String(c.destinationId ?? c.phoneNumber), fields: ['call_audio', ...(c.announceSummary ? ['conversation_summary'] : [])] }),
    output: () => objectOf(['status', 'to', 'destinationId', 'kind', 'openNow']),
  },
  {
    type: 'end_call',
    name: 'End conversation',
    description: 'Ends the conversation politely, with an optional closing line.',
    sendsData: false,
    configSchema: skillConfig([], { closingLine: { type: 'string', maxLength: 500 } }),
    inputs: () => [],
    dataFlow: () => ({ destination: null, fields: [] }),
    output: () => objectOf(['status']),
  },
  {
    type: 'mcp',
    name: 'MCP server',
    description:
      'Offers the allow-listed tools of a remote MCP server (Streamable HTTP, or HTTP+SSE) to the model, each with its own JSON Schema and approval policy (auto, verified_caller_only, never).',
    sendsData: true,
    remoteTools: true,
    configSchema: skillConfig(['url', 'tools'], {
      url: endpointUrl('MCP endpoint (HTTPS; plain http only to HTTP_ALLOW_PRIVATE_HOSTS outside production).'),
      headers: {
        type: 'object',
        maxProperties: 20,
        propertyNames: { pattern: "^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$" },
        additionalProperties: { type: 'string', maxLength: 2000 },
        description: 'Request headers; values may reference organization variables and secrets as {{vars.<name>}} (filled when the server is called).',
      },
      tools: {
        type: 'array',
        minItems: 1,
        maxItems: 50,
        description: 'The allow-list: only these tools of the server are offered or run.',
        items: {
          type: 'object',
          additionalProperties: false,
          required: ['name'],
          properties: {
            name: { type: 'string', minLength: 1, maxLength: 128, description: 'The tool name as the server lists it.' },
            approval: { enum: ['auto', 'verified_caller_only', 'never'], default: 'auto' },
            outputSchema: { type: 'object', description: 'JSON Schema of the result: only the members it declares reach the model and the receipt.' },
          },
        },
      },
      timeoutMs: { type: 'integer', minimum: 500, maximum: 30000, default: MCP_DEFAULT_TIMEOUT_MS, description: 'Cap on listing the tools or on one call, ms.' },
    }),
    check: (c) => mcpConfigErrors(c),
    output: (c, tool) => {
      const schema = tool !== undefined ? mcpToolRule(c as McpSkillConfig, tool)?.outputSchema : undefined;
      return isOutputSchema(schema) ? schema : undefined;
    },
    inputs: () => [],
    dataFlow: (c) => ({
      destination: hostOf(c.url),
      fields: (Array.isArray(c.tools) ? (c.tools as McpSkillConfig['tools']) : []).filter((t) => approvalOf(t) !== 'never').map((t) => `${t.name}(arguments)`),
    }),
  },
];

const BY_TYPE = new Map(SKILL_TYPES.map((t) => [t.type, t]));
const ajv = new Ajv({ allErrors: true, strict: false, useDefaults: false });
addFormats(ajv);
const validators = new Map<string, ValidateFunction>();

/** The catalogue entry of `type`, or undefined. */
export function skillType(type: string): SkillTypeDef | undefined {
  return BY_TYPE.get(type);
}

/**
 * Field errors of `config` against its type's schema, with fields prefixed (e.g. `config.url`).
 * An unknown type is one error on `type`.
 */
export function skillConfigErrors(type: string, config: unknown, prefix = 'config'): FieldError[] {
  const def = BY_TYPE.get(type);
  if (!def) return [{ field: 'type', message: `is not a skill type; one of: ${SKILL_TYPES.map((t) => t.type).join(', ')}` }];
  if (!config || typeof config !== 'object' || Array.isArray(config)) return [{ field: prefix, message: 'must be an object' }];
  let v = validators.get(type);
  if (!v) {
    v = ajv.compile(def.configSchema);
    validators.set(type, v);
  }
  if (v(config)) return (def.check?.(config as Record<string, any>) ?? []).map((e) => ({ field: `${prefix}.${e.field}`, message: e.message }));
  const schemaErrors = toFieldErrors(v.errors ?? []).map((e) => ({ field: e.field === '(body)' ? prefix : `${prefix}.${e.field}`, message: e.message }));
  // The scheme rule needs only the url itself, so a refused config still names a plain-http url with the rest.
  const urlField = `${prefix}.url`;
  const hasUrl = Boolean((def.configSchema as { properties?: Record<string, unknown> }).properties?.url);
  const scheme = hasUrl && !schemaErrors.some((e) => e.field === urlField) ? urlErrors((config as Record<string, unknown>).url).map((e) => ({ field: urlField, message: e.message })) : [];
  return [...schemaErrors, ...scheme];
}

/** The output schema of a skill, or of one of its server's tools (`mcp`); undefined: none, its whole output reaches the model. */
export function skillOutputSchema(type: string, config: Record<string, any>, tool?: string): OutputSchema | undefined {
  return BY_TYPE.get(type)?.output?.(config, tool);
}

/** Required and optional inputs of a skill (empty for an unknown type). */
export function skillInputs(type: string, config: Record<string, any>): SkillInput[] {
  return BY_TYPE.get(type)?.inputs(config) ?? [];
}
