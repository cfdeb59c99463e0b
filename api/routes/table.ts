/**
 * The one route table (STYLE.md "In this project"): every operation of the spec declared once with
 * method, path (spec form, `{param}`), operationId, tag and scopes. Auth, scope checks, the OpenAPI
 * document and the spec-coverage test all read it. Operations without a handler answer 501
 * `not_implemented` after auth and scope checks; `reserved` operations answer 403 (spec "Scope rules" 5).
 */
import type { Scope } from '../../domain/scopes';
import type { FieldError } from '../../domain/errors';

/** HTTP methods used by the API. */
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/** How the caller authenticates: secret key / OAuth token (`secret`), publishable key, or none (provider callbacks, docs). */
export type AuthKind = 'secret' | 'publishable' | 'none';

/** One operation of the API. */
export interface RouteDef {
  operationId: string;
  method: Method;
  /** Path relative to /api/v1 in the spec's form, e.g. `/agents/{id}/publish`. */
  path: string;
  tag: string;
  summary: string;
  /** Every scope listed must be held. */
  scopes: Scope[];
  /** At least one of these must be held too (the handler then checks the one its request needs). */
  scopesAnyOf?: Scope[];
  auth?: AuthKind;
  /** Endpoint of a reserved scope: always 403 for API callers. */
  reserved?: boolean;
  /** Name of the generated request-body schema (schemas/<name>.schema.json). */
  requestSchema?: string;
  /**
   * Field checks the schema cannot express that need nothing but the body (api/middleware/validate.ts):
   * when the schema refuses a body, their errors join the schema's so every offending field is named at
   * once. Given any JSON object (the schema may have refused it), so they must test types themselves.
   */
  bodyChecks?: (body: Record<string, any>) => FieldError[];
  /** Name of the generated schema of the envelope's `data`. */
  responseSchema?: string;
  /** Status of a success (default 200). */
  successStatus?: number;
  /**
   * `Idempotency-Key` policy (api/middleware/idempotency.ts): `required`, `optional`, or `none`.
   * Unset: optional on creating POSTs (201/202), none elsewhere.
   */
  idempotencyKey?: 'required' | 'optional' | 'none';
  /** Also accepts a widget session token (docs/api-notes.md "Widget"), for the one session it names. */
  sessionToken?: boolean;
  /**
   * `bulk`: the request starts bulk work (temporal.config.ts workload class `bulk`), so an organization's are
   * admitted a few at a time per API process (api/middleware/admission.ts). Unset: interactive.
   */
  workload?: 'bulk';
}

/** A row of the table: method, path, operationId and summary, then only what differs from its tag's defaults. */
type Row = [method: Method, path: string, operationId: string, summary: string, ...differs: Partial<RouteDef>[]];

/** A success that created the resource (201). */
const CREATED: Partial<RouteDef> = { successStatus: 201 };
/** A success that accepted work which runs on (202, usually a workflow). */
const ACCEPTED: Partial<RouteDef> = { successStatus: 202 };
/** Starts bulk work: admitted a few at a time per organization (api/middleware/admission.ts). */
const BULK: Partial<RouteDef> = { workload: 'bulk' };

/**
 * Per tag, the scope a GET needs (`read`) and the one every other method needs (`write`) when a row names no
 * `scopes` of its own (spec "Scope rules"); a row of a tag without the default names its scopes (`[]`: none).
 */
const TAG_SCOPES: Partial<Record<string, { read?: Scope; write?: Scope }>> = {
  Agents: { read: 'agents:read', write: 'agents:write' },
  Voices: { read: 'agents:read', write: 'agents:write' },
  Knowledge: { read: 'knowledge:read', write: 'knowledge:write' },
  Skills: { read: 'skills:read', write: 'skills:write' },
  Integrations: { read: 'integrations:read', write: 'integrations:connect' },
  Records: { read: 'records:read', write: 'records:write' },
  Guardrails: { read: 'guardrails:read', write: 'guardrails:write' },
  Playbooks: { read: 'playbooks:read', write: 'playbooks:write' },
  Numbers: { read: 'numbers:read', write: 'numbers:write' },
  Test: { read: 'agents:read', write: 'agents:write' },
  Chat: { read: 'chat:read', write: 'chat:write' },
  Widget: { read: 'widgets:read', write: 'widgets:write' },
  Observe: { read: 'analytics:read' },
  Billing: { read: 'billing:read', write: 'billing:write' },
  ApiKeys: { read: 'keys:write', write: 'keys:write' },
  PublishableKeys: { read: 'pubkeys:read', write: 'pubkeys:write' },
  Team: { read: 'team:read', write: 'team:write' },
  OAuth2: { read: 'keys:write', write: 'keys:write' },
  Webhooks: { read: 'webhooks:write', write: 'webhooks:write' },
  AuditLogs: { read: 'audit:read' },
  Outbound: { read: 'outbound:read', write: 'outbound:write' },
  SMS: { read: 'sms:read', write: 'sms:write' },
  Variables: { read: 'agents:read', write: 'agents:write' },
  Support: { read: 'escalation_destinations:read', write: 'escalation_destinations:write' },
  Dashboards: { read: 'dashboards:read', write: 'dashboards:write' },
  Reports: { read: 'reports:read', write: 'reports:write' },
  Phone: { read: 'phone:read', write: 'phone:write' },
};

/**
 * The operations of `list`, all under `tag`, with the tag's default scopes where a row names none.
 * @throws Error at load when a row names no scopes and its tag has no default for its method
 */
function rows(tag: string, list: Row[]): RouteDef[] {
  return list.map(([method, path, operationId, summary, ...differs]) => {
    const own: Partial<RouteDef> = Object.assign({}, ...differs);
    const scope = method === 'GET' ? TAG_SCOPES[tag]?.read : TAG_SCOPES[tag]?.write;
    if (!own.scopes && !scope) throw new Error(`route table: ${operationId} names no scopes and ${tag} has no default for ${method}`);
    return { method, path, operationId, tag, scopes: own.scopes ?? [scope!], summary, ...own };
  });
}

/** Every operation, grouped by the spec's feature tags. */
export const ROUTES: RouteDef[] = [
  // Agents
  ...rows('Agents', [
    ['GET', '/agents', 'listAgents', 'List agents'],
    ['POST', '/agents', 'createAgent', 'Create an agent', CREATED],
    ['GET', '/agents/{id}', 'getAgent', 'Get an agent (its draft)'],
    ['PATCH', '/agents/{id}', 'updateAgent', 'Autosave the draft (If-Match version)'],
    ['POST', '/agents/{id}/publish', 'publishAgent', 'Publish the draft as a new frozen version (Idempotency-Key)', { idempotencyKey: 'required' }],
    ['POST', '/agents/{id}/rollback', 'rollbackAgent', 'Re-point the published version at an earlier one'],
    ['GET', '/agents/{id}/versions', 'listAgentVersions', 'List frozen versions'],
    ['GET', '/agents/{id}/traffic', 'getAgentTraffic', 'The traffic split of new conversations over published versions'],
    ['PUT', '/agents/{id}/traffic', 'setAgentTraffic', 'Split new conversations over published versions (sticky per counterpart)'],
    ['GET', '/agents/{id}/versions/{versionId}/diff', 'diffAgentVersion', 'Diff a version against the current draft'],
    ['GET', '/agents/{id}/prepublish-report', 'getPrepublishReport', 'Pre-publish report of the draft'],
    // Deletes (not in the spec's rows; docs/api-notes.md "Deletes")
    ['DELETE', '/agents/{id}', 'deleteAgent', 'Delete (archive) an agent: numbers unassigned, publishable keys revoked; versions and conversations stay (409 while a campaign runs)'],
  ]),
  // Voice
  ...rows('Voices', [
    ['GET', '/voices', 'listVoices', 'List voices'],
    ['POST', '/voices/search', 'searchVoices', 'Search voices', { scopes: ['agents:read'] }],
    ['PUT', '/agents/{id}/voice', 'setAgentVoice', "Set the draft's voice"],
  ]),
  // Knowledge
  ...rows('Knowledge', [
    ['GET', '/agents/{agentId}/knowledge/sources', 'listKnowledgeSources', 'List knowledge sources'],
    ['POST', '/agents/{agentId}/knowledge/sources', 'createKnowledgeSource', 'Add a knowledge source (ingested asynchronously)', ACCEPTED, BULK],
    ['POST', '/agents/{agentId}/knowledge/preview', 'previewKnowledge', 'Preview knowledge retrieval for a query', { scopes: ['knowledge:read'] }],
    ['GET', '/agents/{agentId}/knowledge/sources/{id}', 'getKnowledgeSource', 'Get one knowledge source (its status, name and chunk count)'],
    ['DELETE', '/agents/{agentId}/knowledge/sources/{id}', 'deleteKnowledgeSource', 'Delete a ready or failed source from the draft (published versions keep its chunks)'],
    ['PATCH', '/agents/{agentId}/knowledge/sources/{id}', 'updateKnowledgeSource', "Set or remove a URL source's refresh schedule"],
    ['POST', '/agents/{agentId}/knowledge/sources/{id}/refresh', 'refreshKnowledgeSource', 'Check a URL source for changes now (also retries a failed one)', ACCEPTED, BULK],
    ['GET', '/agents/{agentId}/knowledge/sources/{id}/pages', 'listKnowledgeSourcePages', "List a crawling source's pages with their status"],
  ]),
  ...rows('Uploads', [
    ['POST', '/uploads', 'createUpload', 'Upload a file (25 MB limit): knowledge:write or outbound:write, or sms:send for purpose=sms', CREATED, { scopes: [], scopesAnyOf: ['knowledge:write', 'outbound:write', 'sms:send'], idempotencyKey: 'none' }],
  ]),
  // Skills
  ...rows('Skills', [
    ['GET', '/skill-types', 'listSkillTypes', 'Skill type catalogue'],
    ['GET', '/agents/{agentId}/skills', 'listSkills', 'List skills'],
    ['POST', '/agents/{agentId}/skills', 'createSkill', 'Create a skill', CREATED],
    ['PATCH', '/agents/{agentId}/skills/{id}', 'updateSkill', 'Update a skill'],
    ['DELETE', '/agents/{agentId}/skills/{id}', 'deleteSkill', 'Delete a skill'],
  ]),
  // Integrations
  ...rows('Integrations', [
    ['GET', '/integrations', 'listIntegrations', 'Integration status (never tokens)'],
    ['GET', '/integrations/catalog', 'listIntegrationCatalog', 'Integration catalogue'],
    ['POST', '/integrations/{kind}/connect', 'connectIntegration', 'Submit credentials or begin OAuth'],
    ['POST', '/agents/{agentId}/integrations/{kind}/provision', 'provisionIntegration', "Create or update the kind's skills in the agent's draft (201 when created)", { scopes: ['integrations:write', 'skills:write'], idempotencyKey: 'none' }],
    // Integrations and Records beyond the spec's rows (paths not shown; docs/api-notes.md "Integrations and records")
    ['GET', '/integrations/{kind}/oauth/callback', 'completeIntegrationOAuth', "The provider's OAuth redirect (code, state); no API key: the state names the organization", { scopes: [], auth: 'none' }],
    ['DELETE', '/integrations/{kind}', 'disconnectIntegration', 'Disconnect: forget the connection and its sealed credentials'],
    ['POST', '/integrations/{kind}/sync', 'syncIntegrationRecords', 'Sync records from a connected spreadsheet or CRM (workflow records-sync/{connectionId})', ACCEPTED, BULK, { scopes: ['integrations:write', 'records:write'], idempotencyKey: 'none' }],
  ]),
  ...rows('Records', [
    ['GET', '/records', 'listRecords', 'List and search customer records (phone, email, name); audited'],
    ['POST', '/records', 'createRecord', 'Create a customer record', CREATED],
    ['GET', '/records/{id}', 'getRecord', 'Get a customer record; audited'],
    ['PATCH', '/records/{id}', 'updateRecord', 'Update a customer record'],
    ['DELETE', '/records/{id}', 'deleteRecord', 'Delete a customer record'],
    ['POST', '/records/imports', 'importRecords', 'Import records from an uploaded CSV (upsert by phone)', { idempotencyKey: 'none' }],
    ['GET', '/record-schema', 'getRecordSchema', "The organization's record schema: declared fields and which are sensitive (write-only)"],
    ['PUT', '/record-schema', 'putRecordSchema', 'Replace the record schema; values it makes sensitive are sealed at once'],
  ]),
  // Guardrails
  ...rows('Guardrails', [
    ['GET', '/agents/{agentId}/guardrails', 'getGuardrails', 'Get guardrails'],
    ['PUT', '/agents/{agentId}/guardrails', 'putGuardrails', 'Replace guardrails'],
    ['GET', '/agents/{agentId}/caller-verification', 'getCallerVerification', 'Get caller verification'],
    ['PUT', '/agents/{agentId}/caller-verification', 'putCallerVerification', 'Replace caller verification'],
  ]),
  // Playbooks
  ...rows('Playbooks', [
    ['GET', '/agents/{agentId}/playbooks', 'listPlaybooks', 'List playbooks'],
    ['POST', '/agents/{agentId}/playbooks', 'createPlaybook', 'Create a playbook', CREATED],
    ['PATCH', '/agents/{agentId}/playbooks/{id}', 'updatePlaybook', 'Update a playbook (description and when it starts)'],
    ['GET', '/agents/{agentId}/playbooks/{id}/graph', 'getPlaybookGraph', 'Get a playbook graph'],
    ['PUT', '/agents/{agentId}/playbooks/{id}/graph', 'putPlaybookGraph', 'Replace a playbook graph'],
    ['DELETE', '/agents/{agentId}/playbooks/{id}', 'deletePlaybook', 'Delete a playbook from the draft'],
  ]),
  // Numbers
  ...rows('Numbers', [
    ['GET', '/numbers/search', 'searchNumbers', 'Search available numbers'],
    ['POST', '/numbers/reserve', 'reserveNumber', 'Reserve a number'],
    ['POST', '/numbers/purchase', 'purchaseNumber', 'Purchase a number'],
    ['POST', '/numbers/{id}/assign', 'assignNumber', 'Assign a number to an agent'],
    ['GET', '/numbers', 'listNumbers', "The organization's numbers"],
    ['DELETE', '/numbers/{id}', 'releaseNumber', 'Release a number at the provider (409 while assigned)'],
  ]),
  // Test
  ...rows('Test', [
    ['POST', '/agents/{agentId}/talk-token', 'createTalkToken', 'Short-lived talk token (published version unless draftMode)'],
    ['POST', '/agents/{agentId}/simulate', 'simulateAgent', 'Simulate a conversation (202; workflow agent-simulation/{id})', ACCEPTED],
    ['GET', '/agents/{agentId}/simulations/{id}', 'getSimulation', 'Get a simulation: progress, transcript and the verdict on each expectation'],
    ['GET', '/agents/{id}/eval-suites', 'listEvalSuites', "List the agent's evaluation suites"],
    ['POST', '/agents/{id}/eval-suites', 'createEvalSuite', 'Create an evaluation suite: scenarios, expectations, skill stubs, repeat count', CREATED],
    ['GET', '/agents/{id}/eval-suites/{suiteId}', 'getEvalSuite', 'Get an evaluation suite'],
    ['PATCH', '/agents/{id}/eval-suites/{suiteId}', 'updateEvalSuite', 'Update an evaluation suite'],
    ['DELETE', '/agents/{id}/eval-suites/{suiteId}', 'deleteEvalSuite', 'Delete an evaluation suite (its runs stay readable)'],
    ['POST', '/eval-suites/{id}/runs', 'createEvalRun', 'Run a suite against the draft or a version (202; workflow agent-eval/{runId})', ACCEPTED, BULK],
    ['GET', '/eval-suites/{id}/runs', 'listEvalRuns', "List a suite's runs, newest first"],
    ['GET', '/eval-suites/{id}/runs/{runId}', 'getEvalRun', 'Get a run: results per scenario and repeat, pass rate, flakiness, transcripts'],
  ]),
  // Chat
  ...rows('Chat', [
    ['POST', '/chat/sessions', 'createChatSession', 'Start a chat session (published version, or the draft with draftMode)', CREATED],
    ['GET', '/chat/sessions/{id}', 'getChatSession', 'Get a chat session and its messages', { sessionToken: true }],
    ['POST', '/chat/sessions/{id}/end', 'endChatSession', 'End a chat session'],
    ['POST', '/chat/sessions/{id}/messages', 'sendChatMessage', 'Send a chat message (JSON, or SSE with Accept: text/event-stream)', { sessionToken: true }],
    ['POST', '/chat/completions', 'createChatCompletion', 'OpenAI-compatible chat completions'],
    // OpenAI-compatible model list (not in the spec's tables; docs/api-notes.md "OpenAI compatibility"): the chat read scope.
    ['GET', '/models', 'listModels', "OpenAI-compatible list of the organization's agents as models"],
    ['GET', '/models/{id}', 'getModel', 'OpenAI-compatible model: an agent, its draft or one of its versions'],
    ['POST', '/responses', 'createResponse', 'OpenAI-compatible Responses API: one turn of an agent conversation (JSON, or typed SSE events with stream: true)'],
    ['GET', '/responses/{id}', 'getResponse', 'Get a stored response (OpenAI-compatible)'],
  ]),
  // Widget
  ...rows('Widget', [
    ['GET', '/agents/{agentId}/widget', 'getWidget', 'Get widget settings'],
    ['PUT', '/agents/{agentId}/widget', 'putWidget', 'Replace widget settings'],
    ['POST', '/chat/widget/sessions', 'createWidgetSession', 'Start a widget chat session (publishable key; the page Origin must be allowed)', CREATED, { scopes: [], auth: 'publishable', idempotencyKey: 'none' }],
    ['POST', '/chat/widget/sessions/{id}/voice-token', 'createWidgetVoiceToken', "Mint a short-lived widget voice token for the voice relay (the session's widget session token, from its origin)", CREATED, { scopes: [], auth: 'publishable', sessionToken: true, idempotencyKey: 'none' }],
  ]),
  // Observe
  ...rows('Observe', [
    ['GET', '/agents/{agentId}/analytics', 'getAgentAnalytics', 'Agent analytics'],
    ['GET', '/analytics/overview', 'getAnalyticsOverview', 'Analytics overview'],
    ['GET', '/conversations', 'listConversations', 'List conversations of every channel'],
    ['GET', '/conversations/{id}/transcript', 'getTranscript', 'Verbatim transcript (calls:read; with only analytics:read it is empty)', { scopes: [], scopesAnyOf: ['calls:read', 'analytics:read'] }],
    ['GET', '/conversations/{id}/receipt', 'getReceipt', 'Conversation receipt', { scopes: ['calls:read'] }],
    // Analysis re-runs (paths not shown in the spec; docs/api-notes.md "Conversation analysis")
    ['POST', '/conversations/{id}/analysis', 'reanalyzeConversation', "Analyse an ended conversation again (the agent's current plan, or the fields given): a new revision", CREATED, { scopes: ['calls:read', 'agents:write'] }],
    ['GET', '/conversations/{id}/analysis/revisions', 'listAnalysisRevisions', "Every revision of a conversation's analysis, newest first", { scopes: ['calls:read'] }],
    ['POST', '/conversations/analysis-runs', 'createAnalysisRun', 'Re-run the analysis over a filter (agent, channel, time range): 202; workflow analysis-run/{id}', ACCEPTED, BULK, { scopes: ['calls:read', 'agents:write'] }],
    ['GET', '/conversations/analysis-runs', 'listAnalysisRuns', 'Bulk analysis runs, newest first'],
    ['GET', '/conversations/analysis-runs/{id}', 'getAnalysisRun', 'A bulk analysis run and its progress'],
    // Live control beyond the spec's operations (docs/api-notes.md "Live control")
    ['POST', '/conversations/{id}/control', 'controlConversation', "Control a conversation in progress: on a call say a line, add a message to the model's context, transfer or end; in chat, widget and SMS take over, write, hand back or end", { scopes: ['calls:read', 'chat:write'], idempotencyKey: 'none' }],
    ['GET', '/conversations/{id}/live', 'streamConversation', 'Follow a conversation as it happens (SSE: state, message … done)', { scopes: ['calls:read'] }],
  ]),
  // Billing
  ...rows('Billing', [
    ['GET', '/billing/wallet', 'getWallet', 'Wallet balance'],
    // Auto-recharge (not in the spec; docs/api-notes.md "Billing": auto-recharge)
    ['PUT', '/billing/wallet/auto-recharge', 'setWalletAutoRecharge', 'Turn wallet auto-recharge on or off: threshold and amount in cents'],
    ['POST', '/billing/wallet/topup', 'topUpWallet', 'Top up the wallet (Idempotency-Key)', CREATED, { idempotencyKey: 'required' }],
    ['POST', '/billing/provider-webhooks/{provider}', 'receivePaymentProviderWebhook', 'Payments provider webhook (Stripe), authenticated by its signature (Stripe-Signature)', { scopes: [], auth: 'none' }],
    ['GET', '/billing/usage', 'listUsage', 'Usage entries'],
    ['GET', '/billing/invoices', 'listInvoices', 'Invoices'],
  ]),
  // ApiKeys (paths not shown in the spec; docs/api-notes.md "Credentials and tenancy"). Creating and
  // rotating take no Idempotency-Key: a replay would have to store the secret the answer shows once.
  ...rows('ApiKeys', [
    ['GET', '/api-keys', 'listApiKeys', 'List secret keys that still authenticate (never the secret)'],
    ['POST', '/api-keys', 'createApiKey', 'Create a secret key (shown once) with scopes the caller holds', CREATED, { idempotencyKey: 'none' }],
    ['POST', '/api-keys/{id}/rotate', 'rotateApiKey', 'Rotate a secret key: a new secret (shown once); the old one works for a grace period', { idempotencyKey: 'none' }],
    ['DELETE', '/api-keys/{id}', 'revokeApiKey', 'Revoke a secret key (at once, in every API process)'],
  ]),
  // PublishableKeys (spec "Authentication" 3; paths not shown)
  ...rows('PublishableKeys', [
    ['GET', '/publishable-keys', 'listPublishableKeys', 'List publishable keys'],
    ['POST', '/publishable-keys', 'createPublishableKey', 'Create a publishable key pinned to one agent, with allowed origins (shown once)', CREATED, { idempotencyKey: 'none' }],
    ['DELETE', '/publishable-keys/{id}', 'revokePublishableKey', 'Revoke a publishable key (at once)'],
  ]),
  // Team (paths not shown in the spec; docs/team-and-oauth.md "Team")
  ...rows('Team', [
    ['GET', '/team/members', 'listTeamMembers', 'List members and their roles'],
    ['PATCH', '/team/members/{id}', 'updateTeamMember', "Change a member's role (the last owner stays an owner)"],
    ['DELETE', '/team/members/{id}', 'removeTeamMember', 'Remove a member (their app approvals and tokens stop at once)'],
    ['GET', '/team/invitations', 'listTeamInvitations', 'List pending invitations'],
    ['POST', '/team/invitations', 'createTeamInvitation', 'Invite a person by email (single-use link, 7 days)', CREATED],
    ['DELETE', '/team/invitations/{id}', 'revokeTeamInvitation', 'Revoke a pending invitation'],
    ['GET', '/team/grants', 'listTeamGrants', 'List OAuth app approvals (grants) of members'],
    ['DELETE', '/team/grants/{id}', 'revokeTeamGrant', "Revoke an app's approval: its tokens stop at once"],
  ]),
  // OAuth2 clients (spec "Authentication" 4; paths not shown; docs/team-and-oauth.md "Connect an app with OAuth"). Creating
  // takes no Idempotency-Key: a replay would have to store the secret the answer shows once.
  ...rows('OAuth2', [
    ['GET', '/oauth-clients', 'listOAuthClients', 'List OAuth clients'],
    ['POST', '/oauth-clients', 'createOAuthClient', 'Register an OAuth client (a confidential client secret is shown once)', CREATED, { idempotencyKey: 'none' }],
    ['DELETE', '/oauth-clients/{id}', 'deleteOAuthClient', 'Delete an OAuth client (its grants and tokens stop at once)'],
  ]),
  // Webhooks
  ...rows('Webhooks', [
    ['GET', '/webhooks', 'listWebhooks', 'List webhook endpoints'],
    ['POST', '/webhooks', 'createWebhook', 'Create a webhook endpoint', CREATED],
    ['GET', '/webhooks/{id}', 'getWebhook', 'Get a webhook endpoint'],
    ['PATCH', '/webhooks/{id}', 'updateWebhook', 'Update a webhook endpoint (enabled: false disables it)'],
    ['DELETE', '/webhooks/{id}', 'deleteWebhook', 'Delete a webhook endpoint'],
    ['POST', '/webhooks/{id}/rotate-secret', 'rotateWebhookSecret', 'Rotate the signing secret (shown once)'],
    ['POST', '/webhooks/{id}/test', 'testWebhook', 'Send a webhook.test event', ACCEPTED, BULK],
    ['GET', '/webhooks/{id}/deliveries', 'listWebhookDeliveries', 'List deliveries and attempts'],
    ['POST', '/webhooks/{id}/deliveries/{deliveryId}/retry', 'retryWebhookDelivery', 'Retry a failed delivery', ACCEPTED, BULK],
    ['POST', '/webhooks/{id}/replay', 'replayWebhook', 'Replay past events of a window to the endpoint', ACCEPTED, BULK],
    ['GET', '/webhooks/{id}/replays/{replayId}', 'getWebhookReplay', 'Get a replay and its progress'],
  ]),
  // Audit
  ...rows('AuditLogs', [
    ['GET', '/audit-logs', 'listAuditLogs', 'Audit log entries'],
  ]),
  // Outbound
  ...rows('Outbound', [
    ['POST', '/contact-lists', 'createContactList', 'Create a contact list', CREATED],
    ['GET', '/contact-lists', 'listContactLists', 'List contact lists'],
    ['GET', '/contact-lists/{id}', 'getContactList', 'Get a contact list with its import progress'],
    ['POST', '/contact-lists/{id}/imports', 'importContacts', 'Import and scrub a CSV (asynchronous)', ACCEPTED, BULK],
    ['GET', '/contact-lists/{id}/contacts', 'listContactListContacts', 'Rows of a list with their scrub outcome'],
    ['POST', '/do-not-call', 'addDoNotCall', "Add numbers to the organization's do-not-call list"],
    ['POST', '/campaigns', 'createCampaign', 'Create a campaign (draft)', CREATED],
    ['GET', '/campaigns', 'listCampaigns', 'List campaigns with live counters'],
    ['GET', '/campaigns/{id}', 'getCampaign', 'Get a campaign with live counters'],
    ['GET', '/campaigns/{id}/attempts', 'listCampaignAttempts', "A campaign's call attempts"],
    ['POST', '/campaigns/{id}/launch', 'launchCampaign', 'Launch: one call attempt per valid contact, dialed in the calling window'],
    ['POST', '/campaigns/{id}/pause', 'pauseCampaign', 'Pause dialing'],
    ['POST', '/campaigns/{id}/resume', 'resumeCampaign', 'Resume dialing'],
    ['POST', '/campaigns/{id}/cancel', 'cancelCampaign', 'Cancel: undialed attempts are cancelled'],
    // Calls (paths not shown in the spec; docs/api-notes.md "Calls on demand"): one call placed on demand,
    // and every call read back (reading a call is calls:read, spec "Scope rules" 1).
    ['POST', '/calls', 'createCall', 'Place one outbound call answered by an agent (202; workflow voice-call/{callId}; Idempotency-Key required)', ACCEPTED, { idempotencyKey: 'required' }],
  ]),
  ...rows('Observe', [
    ['GET', '/calls', 'listCalls', 'List calls (inbound, campaign and on demand), newest first; filters direction, agentId, status, from, to', { scopes: ['calls:read'] }],
    ['GET', '/calls/{id}', 'getCall', 'Get a call', { scopes: ['calls:read'] }],
  ]),
  // SMS
  ...rows('SMS', [
    ['GET', '/sms', 'getSMSRegistration', 'Get the 10DLC registration'],
    ['PUT', '/sms', 'saveSMSRegistration', 'Save the 10DLC registration draft'],
    ['POST', '/sms/review', 'reviewSMSRegistration', 'Free compliance review of the draft'],
    ['POST', '/sms/submit', 'submitSMSRegistration', 'Submit the registration to the carrier (Idempotency-Key)', { idempotencyKey: 'optional' }],
    ['POST', '/sms/messages', 'sendSMSMessage', "Send one text from the organization's own number", ACCEPTED, { scopes: ['sms:send'] }],
    ['PUT', '/sms/contacts/{e164}/consent', 'recordSMSConsent', 'Record express consent'],
    ['DELETE', '/sms/contacts/{e164}/consent', 'withdrawSMSConsent', 'Withdraw consent'],
    ['GET', '/sms/media/{id}', 'getSMSMedia', 'Short-lived link to a text attachment'],
    ['GET', '/sms/media/{id}/content', 'getSMSMediaContent', 'Bytes of a text attachment through a signed link (expires, signature); no API key', { scopes: [], auth: 'none' }],
    ['GET', '/sms/contacts', 'listSMSContacts', 'Contact roster with consent and opt-out state'],
    ['GET', '/sms/opt-outs', 'listSMSOptOuts', 'Opt-out list (suppressions)'],
    ['GET', '/sms/consent-export', 'exportSMSConsent', 'Proof-of-consent export (CSV)'],
    ['GET', '/sms/numbers', 'listSMSNumbers', 'Numbers with their SMS toggle and the registration status'],
    ['PUT', '/numbers/{id}/sms', 'setNumberSMS', 'Turn SMS on or off for a number'],
    ['POST', '/sms/provider-callbacks/{provider}', 'receiveSMSProviderCallback', 'Carrier/telephony callback, authenticated by its HMAC signature (X-Carrier-Signature)', { scopes: [], auth: 'none' }],
  ]),
  // Variables, escalation destinations, onboarding, meta and the scopes without a named group (paths not
  // shown in the spec; docs/api-notes.md "Variables, escalation, onboarding, meta and settings").
  ...rows('Variables', [
    ['GET', '/variables', 'listVariables', 'Organization variables (secret values never)'],
    ['POST', '/variables', 'createVariable', 'Create a variable (a secret value is write-only)', CREATED],
    ['GET', '/variables/{id}', 'getVariable', 'Get a variable'],
    ['PATCH', '/variables/{id}', 'updateVariable', "Change a variable's description or value"],
    ['DELETE', '/variables/{id}', 'deleteVariable', 'Delete a variable no agent refers to'],
  ]),
  ...rows('Support', [
    ['GET', '/escalation-destinations', 'listEscalationDestinations', 'Escalation destinations'],
    ['POST', '/escalation-destinations', 'createEscalationDestination', 'Create an escalation destination (phone, SIP URI, e-mail or webhook, with hours)', CREATED],
    ['GET', '/escalation-destinations/{id}', 'getEscalationDestination', 'Get an escalation destination'],
    ['PATCH', '/escalation-destinations/{id}', 'updateEscalationDestination', 'Change an escalation destination'],
    ['DELETE', '/escalation-destinations/{id}', 'deleteEscalationDestination', 'Delete an escalation destination nothing targets'],
    ['GET', '/presence', 'listPresence', 'Presence of the teammates who take escalations'],
    ['PUT', '/presence/{teammate}', 'setPresence', "Set a teammate's presence", { scopes: ['presence:write'] }],
  ]),
  ...rows('Onboarding', [
    ['GET', '/onboarding', 'getOnboarding', "Setup checklist computed from the organization's state (any secret key)", { scopes: [] }],
  ]),
  ...rows('Meta', [
    ['GET', '/meta', 'getMeta', 'Service and API version, scope catalogue, limits, the caller (any secret key)', { scopes: [] }],
  ]),
  ...rows('Dashboards', [
    ['GET', '/dashboards', 'listDashboards', 'Saved dashboards'],
    ['POST', '/dashboards', 'createDashboard', 'Save a dashboard', CREATED],
    ['GET', '/dashboards/{id}', 'getDashboard', 'Get a dashboard'],
    ['PATCH', '/dashboards/{id}', 'updateDashboard', 'Change a dashboard'],
    ['DELETE', '/dashboards/{id}', 'deleteDashboard', 'Delete a dashboard'],
    ['GET', '/dashboards/{id}/data', 'getDashboardData', "A dashboard's figures now", { scopes: ['dashboards:read', 'analytics:read'] }],
  ]),
  ...rows('Reports', [
    ['GET', '/reports', 'listReports', 'Reports and their files'],
    ['POST', '/reports', 'createReport', 'Export conversations, usage or consent as CSV, on demand or on a schedule (202; workflow report-export/{id})', ACCEPTED, BULK],
    ['GET', '/reports/{id}', 'getReport', 'Get a report and its files'],
    ['POST', '/reports/{id}/cancel', 'cancelReport', 'Cancel a scheduled or unfinished report'],
    ['GET', '/reports/{id}/files/{fileId}', 'downloadReportFile', 'Download a report file (text/csv)'],
  ]),
  ...rows('Phone', [
    ['GET', '/numbers/{id}/settings', 'getPhoneSettings', "A number's phone settings: voicemail, recording consent, business hours"],
    ['PUT', '/numbers/{id}/settings', 'putPhoneSettings', "Replace a number's phone settings"],
  ]),
  // Reserved (spec "Scope rules" 5): answer 403 even for correctly scoped calls.
  ...rows('Support', [
    ['GET', '/escalation-policies', 'listEscalationPolicies', 'Reserved', { scopes: ['escalation_policies:read'], reserved: true }],
    ['PUT', '/escalation-policies', 'putEscalationPolicies', 'Reserved', { scopes: ['escalation_policies:write'], reserved: true }],
    ['GET', '/escalations', 'listEscalations', 'Reserved', { scopes: ['escalations:read'], reserved: true }],
    ['POST', '/escalations', 'initiateEscalation', 'Reserved', { scopes: ['escalations:initiate'], reserved: true }],
    ['POST', '/escalations/{id}/claim', 'claimEscalation', 'Reserved', { scopes: ['escalations:claim'], reserved: true }],
    ['POST', '/escalations/{id}/respond', 'respondEscalation', 'Reserved', { scopes: ['escalations:respond'], reserved: true }],
    ['POST', '/escalations/{id}/resolve', 'resolveEscalation', 'Reserved', { scopes: ['escalations:resolve'], reserved: true }],
  ]),
  ...rows('Observe', [
    ['POST', '/analytics/events', 'recordAnalyticsEvent', 'Reserved', { scopes: ['analytics:write'], reserved: true }],
  ]),
];

/** `/agents/{id}` → `/agents/:id` (Koa router syntax). */
export function toKoaPath(path: string): string {
  return path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
}
