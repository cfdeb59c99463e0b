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
}

const r = (
  method: Method,
  path: string,
  operationId: string,
  tag: string,
  scopes: Scope[],
  summary: string,
  extra: Partial<RouteDef> = {},
): RouteDef => ({ method, path, operationId, tag, scopes, summary, ...extra });

/** Every operation, grouped by the spec's feature tags. */
export const ROUTES: RouteDef[] = [
  // Agents
  r('GET', '/agents', 'listAgents', 'Agents', ['agents:read'], 'List agents'),
  r('POST', '/agents', 'createAgent', 'Agents', ['agents:write'], 'Create an agent', { successStatus: 201 }),
  r('GET', '/agents/{id}', 'getAgent', 'Agents', ['agents:read'], 'Get an agent (its draft)'),
  r('PATCH', '/agents/{id}', 'updateAgent', 'Agents', ['agents:write'], 'Autosave the draft (If-Match version)'),
  r('POST', '/agents/{id}/publish', 'publishAgent', 'Agents', ['agents:write'], 'Publish the draft as a new frozen version (Idempotency-Key)', { idempotencyKey: 'required' }),
  r('POST', '/agents/{id}/rollback', 'rollbackAgent', 'Agents', ['agents:write'], 'Re-point the published version at an earlier one'),
  r('GET', '/agents/{id}/versions', 'listAgentVersions', 'Agents', ['agents:read'], 'List frozen versions'),
  r('GET', '/agents/{id}/traffic', 'getAgentTraffic', 'Agents', ['agents:read'], 'The traffic split of new conversations over published versions'),
  r('PUT', '/agents/{id}/traffic', 'setAgentTraffic', 'Agents', ['agents:write'], 'Split new conversations over published versions (sticky per counterpart)'),
  r('GET', '/agents/{id}/versions/{versionId}/diff', 'diffAgentVersion', 'Agents', ['agents:read'], 'Diff a version against the current draft'),
  r('GET', '/agents/{id}/prepublish-report', 'getPrepublishReport', 'Agents', ['agents:read'], 'Pre-publish report of the draft'),
  // Deletes (not in the spec's rows; docs/api-notes.md "Deletes")
  r('DELETE', '/agents/{id}', 'deleteAgent', 'Agents', ['agents:write'], 'Delete (archive) an agent: numbers unassigned, publishable keys revoked; versions and conversations stay (409 while a campaign runs)'),
  // Voice
  r('GET', '/voices', 'listVoices', 'Voices', ['agents:read'], 'List voices'),
  r('POST', '/voices/search', 'searchVoices', 'Voices', ['agents:read'], 'Search voices'),
  r('PUT', '/agents/{id}/voice', 'setAgentVoice', 'Voices', ['agents:write'], "Set the draft's voice"),
  // Knowledge
  r('GET', '/agents/{agentId}/knowledge/sources', 'listKnowledgeSources', 'Knowledge', ['knowledge:read'], 'List knowledge sources'),
  r('POST', '/agents/{agentId}/knowledge/sources', 'createKnowledgeSource', 'Knowledge', ['knowledge:write'], 'Add a knowledge source (ingested asynchronously)', { successStatus: 202 }),
  r('POST', '/agents/{agentId}/knowledge/preview', 'previewKnowledge', 'Knowledge', ['knowledge:read'], 'Preview knowledge retrieval for a query'),
  r('DELETE', '/agents/{agentId}/knowledge/sources/{id}', 'deleteKnowledgeSource', 'Knowledge', ['knowledge:write'], 'Delete a ready or failed source from the draft (published versions keep its chunks)'),
  r('PATCH', '/agents/{agentId}/knowledge/sources/{id}', 'updateKnowledgeSource', 'Knowledge', ['knowledge:write'], "Set or remove a URL source's refresh schedule"),
  r('POST', '/agents/{agentId}/knowledge/sources/{id}/refresh', 'refreshKnowledgeSource', 'Knowledge', ['knowledge:write'], 'Check a URL source for changes now (also retries a failed one)', { successStatus: 202 }),
  r('GET', '/agents/{agentId}/knowledge/sources/{id}/pages', 'listKnowledgeSourcePages', 'Knowledge', ['knowledge:read'], "List a crawling source's pages with their status"),
  r('POST', '/uploads', 'createUpload', 'Uploads', [], 'Upload a file (25 MB limit): knowledge:write or outbound:write, or sms:send for purpose=sms', { successStatus: 201, scopesAnyOf: ['knowledge:write', 'outbound:write', 'sms:send'], idempotencyKey: 'none' }),
  // Skills
  r('GET', '/skill-types', 'listSkillTypes', 'Skills', ['skills:read'], 'Skill type catalogue'),
  r('GET', '/agents/{agentId}/skills', 'listSkills', 'Skills', ['skills:read'], 'List skills'),
  r('POST', '/agents/{agentId}/skills', 'createSkill', 'Skills', ['skills:write'], 'Create a skill', { successStatus: 201 }),
  r('PATCH', '/agents/{agentId}/skills/{id}', 'updateSkill', 'Skills', ['skills:write'], 'Update a skill'),
  r('DELETE', '/agents/{agentId}/skills/{id}', 'deleteSkill', 'Skills', ['skills:write'], 'Delete a skill'),
  // Integrations
  r('GET', '/integrations', 'listIntegrations', 'Integrations', ['integrations:read'], 'Integration status (never tokens)'),
  r('GET', '/integrations/catalog', 'listIntegrationCatalog', 'Integrations', ['integrations:read'], 'Integration catalogue'),
  r('POST', '/integrations/{kind}/connect', 'connectIntegration', 'Integrations', ['integrations:connect'], 'Submit credentials or begin OAuth'),
  r('POST', '/agents/{agentId}/integrations/{kind}/provision', 'provisionIntegration', 'Integrations', ['integrations:write', 'skills:write'], "Create or update the kind's skills in the agent's draft (201 when created)", { idempotencyKey: 'none' }),
  // Integrations and Records beyond the spec's rows (paths not shown; docs/api-notes.md "Integrations and records")
  r('GET', '/integrations/{kind}/oauth/callback', 'completeIntegrationOAuth', 'Integrations', [], "The provider's OAuth redirect (code, state); no API key: the state names the organization", { auth: 'none' }),
  r('DELETE', '/integrations/{kind}', 'disconnectIntegration', 'Integrations', ['integrations:connect'], 'Disconnect: forget the connection and its sealed credentials'),
  r('POST', '/integrations/{kind}/sync', 'syncIntegrationRecords', 'Integrations', ['integrations:write', 'records:write'], 'Sync records from a connected spreadsheet or CRM (workflow records-sync/{connectionId})', { successStatus: 202, idempotencyKey: 'none' }),
  r('GET', '/records', 'listRecords', 'Records', ['records:read'], 'List and search customer records (phone, email, name); audited'),
  r('POST', '/records', 'createRecord', 'Records', ['records:write'], 'Create a customer record', { successStatus: 201 }),
  r('GET', '/records/{id}', 'getRecord', 'Records', ['records:read'], 'Get a customer record; audited'),
  r('PATCH', '/records/{id}', 'updateRecord', 'Records', ['records:write'], 'Update a customer record'),
  r('DELETE', '/records/{id}', 'deleteRecord', 'Records', ['records:write'], 'Delete a customer record'),
  r('POST', '/records/imports', 'importRecords', 'Records', ['records:write'], 'Import records from an uploaded CSV (upsert by phone)', { idempotencyKey: 'none' }),
  r('GET', '/record-schema', 'getRecordSchema', 'Records', ['records:read'], "The organization's record schema: declared fields and which are sensitive (write-only)"),
  r('PUT', '/record-schema', 'putRecordSchema', 'Records', ['records:write'], 'Replace the record schema; values it makes sensitive are sealed at once'),
  // Guardrails
  r('GET', '/agents/{agentId}/guardrails', 'getGuardrails', 'Guardrails', ['guardrails:read'], 'Get guardrails'),
  r('PUT', '/agents/{agentId}/guardrails', 'putGuardrails', 'Guardrails', ['guardrails:write'], 'Replace guardrails'),
  r('GET', '/agents/{agentId}/caller-verification', 'getCallerVerification', 'Guardrails', ['guardrails:read'], 'Get caller verification'),
  r('PUT', '/agents/{agentId}/caller-verification', 'putCallerVerification', 'Guardrails', ['guardrails:write'], 'Replace caller verification'),
  // Playbooks
  r('GET', '/agents/{agentId}/playbooks', 'listPlaybooks', 'Playbooks', ['playbooks:read'], 'List playbooks'),
  r('POST', '/agents/{agentId}/playbooks', 'createPlaybook', 'Playbooks', ['playbooks:write'], 'Create a playbook', { successStatus: 201 }),
  r('PATCH', '/agents/{agentId}/playbooks/{id}', 'updatePlaybook', 'Playbooks', ['playbooks:write'], 'Update a playbook (description and when it starts)'),
  r('GET', '/agents/{agentId}/playbooks/{id}/graph', 'getPlaybookGraph', 'Playbooks', ['playbooks:read'], 'Get a playbook graph'),
  r('PUT', '/agents/{agentId}/playbooks/{id}/graph', 'putPlaybookGraph', 'Playbooks', ['playbooks:write'], 'Replace a playbook graph'),
  r('DELETE', '/agents/{agentId}/playbooks/{id}', 'deletePlaybook', 'Playbooks', ['playbooks:write'], 'Delete a playbook from the draft'),
  // Numbers
  r('GET', '/numbers/search', 'searchNumbers', 'Numbers', ['numbers:read'], 'Search available numbers'),
  r('POST', '/numbers/reserve', 'reserveNumber', 'Numbers', ['numbers:write'], 'Reserve a number'),
  r('POST', '/numbers/purchase', 'purchaseNumber', 'Numbers', ['numbers:write'], 'Purchase a number'),
  r('POST', '/numbers/{id}/assign', 'assignNumber', 'Numbers', ['numbers:write'], 'Assign a number to an agent'),
  r('GET', '/numbers', 'listNumbers', 'Numbers', ['numbers:read'], "The organization's numbers"),
  r('DELETE', '/numbers/{id}', 'releaseNumber', 'Numbers', ['numbers:write'], 'Release a number at the provider (409 while assigned)'),
  // Test
  r('POST', '/agents/{agentId}/talk-token', 'createTalkToken', 'Test', ['agents:write'], 'Short-lived talk token (published version unless draftMode)'),
  r('POST', '/agents/{agentId}/simulate', 'simulateAgent', 'Test', ['agents:write'], 'Simulate a conversation (202; workflow agent-simulation/{id})', { successStatus: 202 }),
  r('GET', '/agents/{agentId}/simulations/{id}', 'getSimulation', 'Test', ['agents:read'], 'Get a simulation: progress, transcript and the verdict on each expectation'),
  r('GET', '/agents/{id}/eval-suites', 'listEvalSuites', 'Test', ['agents:read'], "List the agent's evaluation suites"),
  r('POST', '/agents/{id}/eval-suites', 'createEvalSuite', 'Test', ['agents:write'], 'Create an evaluation suite: scenarios, expectations, skill stubs, repeat count', { successStatus: 201 }),
  r('GET', '/agents/{id}/eval-suites/{suiteId}', 'getEvalSuite', 'Test', ['agents:read'], 'Get an evaluation suite'),
  r('PATCH', '/agents/{id}/eval-suites/{suiteId}', 'updateEvalSuite', 'Test', ['agents:write'], 'Update an evaluation suite'),
  r('DELETE', '/agents/{id}/eval-suites/{suiteId}', 'deleteEvalSuite', 'Test', ['agents:write'], 'Delete an evaluation suite (its runs stay readable)'),
  r('POST', '/eval-suites/{id}/runs', 'createEvalRun', 'Test', ['agents:write'], 'Run a suite against the draft or a version (202; workflow agent-eval/{runId})', { successStatus: 202 }),
  r('GET', '/eval-suites/{id}/runs', 'listEvalRuns', 'Test', ['agents:read'], "List a suite's runs, newest first"),
  r('GET', '/eval-suites/{id}/runs/{runId}', 'getEvalRun', 'Test', ['agents:read'], 'Get a run: results per scenario and repeat, pass rate, flakiness, transcripts'),
  // Chat
  r('POST', '/chat/sessions', 'createChatSession', 'Chat', ['chat:write'], 'Start a chat session (published version, or the draft with draftMode)', { successStatus: 201 }),
  r('GET', '/chat/sessions/{id}', 'getChatSession', 'Chat', ['chat:read'], 'Get a chat session and its messages', { sessionToken: true }),
  r('POST', '/chat/sessions/{id}/end', 'endChatSession', 'Chat', ['chat:write'], 'End a chat session'),
  r('POST', '/chat/sessions/{id}/messages', 'sendChatMessage', 'Chat', ['chat:write'], 'Send a chat message (JSON, or SSE with Accept: text/event-stream)', { sessionToken: true }),
  r('POST', '/chat/completions', 'createChatCompletion', 'Chat', ['chat:write'], 'OpenAI-compatible chat completions'),
  // OpenAI-compatible model list (not in the spec's tables; docs/api-notes.md "OpenAI compatibility"): the chat read scope.
  r('GET', '/models', 'listModels', 'Chat', ['chat:read'], "OpenAI-compatible list of the organization's agents as models"),
  r('GET', '/models/{id}', 'getModel', 'Chat', ['chat:read'], 'OpenAI-compatible model: an agent, its draft or one of its versions'),
  r('POST', '/responses', 'createResponse', 'Chat', ['chat:write'], 'OpenAI-compatible Responses API: one turn of an agent conversation (JSON, or typed SSE events with stream: true)'),
  r('GET', '/responses/{id}', 'getResponse', 'Chat', ['chat:read'], 'Get a stored response (OpenAI-compatible)'),
  // Widget
  r('GET', '/agents/{agentId}/widget', 'getWidget', 'Widget', ['widgets:read'], 'Get widget settings'),
  r('PUT', '/agents/{agentId}/widget', 'putWidget', 'Widget', ['widgets:write'], 'Replace widget settings'),
  r('POST', '/chat/widget/sessions', 'createWidgetSession', 'Widget', [], 'Start a widget chat session (publishable key; the page Origin must be allowed)', { auth: 'publishable', successStatus: 201, idempotencyKey: 'none' }),
  r('POST', '/chat/widget/sessions/{id}/voice-token', 'createWidgetVoiceToken', 'Widget', [], "Mint a short-lived widget voice token for the voice relay (the session's widget session token, from its origin)", { auth: 'publishable', sessionToken: true, successStatus: 201, idempotencyKey: 'none' }),
  // Observe
  r('GET', '/agents/{agentId}/analytics', 'getAgentAnalytics', 'Observe', ['analytics:read'], 'Agent analytics'),
  r('GET', '/analytics/overview', 'getAnalyticsOverview', 'Observe', ['analytics:read'], 'Analytics overview'),
  r('GET', '/conversations', 'listConversations', 'Observe', ['analytics:read'], 'List conversations of every channel'),
  r('GET', '/conversations/{id}/transcript', 'getTranscript', 'Observe', [], 'Verbatim transcript (calls:read; with only analytics:read it is empty)', { scopesAnyOf: ['calls:read', 'analytics:read'] }),
  r('GET', '/conversations/{id}/receipt', 'getReceipt', 'Observe', ['calls:read'], 'Conversation receipt'),
  // Analysis re-runs (paths not shown in the spec; docs/api-notes.md "Conversation analysis")
  r('POST', '/conversations/{id}/analysis', 'reanalyzeConversation', 'Observe', ['calls:read', 'agents:write'], "Analyse an ended conversation again (the agent's current plan, or the fields given): a new revision", { successStatus: 201 }),
  r('GET', '/conversations/{id}/analysis/revisions', 'listAnalysisRevisions', 'Observe', ['calls:read'], "Every revision of a conversation's analysis, newest first"),
  r('POST', '/conversations/analysis-runs', 'createAnalysisRun', 'Observe', ['calls:read', 'agents:write'], 'Re-run the analysis over a filter (agent, channel, time range): 202; workflow analysis-run/{id}', { successStatus: 202 }),
  r('GET', '/conversations/analysis-runs', 'listAnalysisRuns', 'Observe', ['analytics:read'], 'Bulk analysis runs, newest first'),
  r('GET', '/conversations/analysis-runs/{id}', 'getAnalysisRun', 'Observe', ['analytics:read'], 'A bulk analysis run and its progress'),
  // Live control beyond the spec's operations (docs/api-notes.md "Live control")
  r('POST', '/conversations/{id}/control', 'controlConversation', 'Observe', ['calls:read', 'chat:write'], 'Control a conversation in progress: on a call say a line, add a message to the model\'s context, transfer or end; in chat, widget and SMS take over, write, hand back or end', { idempotencyKey: 'none' }),
  r('GET', '/conversations/{id}/live', 'streamConversation', 'Observe', ['calls:read'], 'Follow a conversation as it happens (SSE: state, message … done)'),
  // Billing
  r('GET', '/billing/wallet', 'getWallet', 'Billing', ['billing:read'], 'Wallet balance'),
  r('POST', '/billing/wallet/topup', 'topUpWallet', 'Billing', ['billing:write'], 'Top up the wallet (Idempotency-Key)', { successStatus: 201, idempotencyKey: 'required' }),
  r('GET', '/billing/usage', 'listUsage', 'Billing', ['billing:read'], 'Usage entries'),
  r('GET', '/billing/invoices', 'listInvoices', 'Billing', ['billing:read'], 'Invoices'),
  // ApiKeys (paths not shown in the spec; docs/api-notes.md "Credentials and tenancy"). Creating and
  // rotating take no Idempotency-Key: a replay would have to store the secret the answer shows once.
  r('GET', '/api-keys', 'listApiKeys', 'ApiKeys', ['keys:write'], 'List secret keys that still authenticate (never the secret)'),
  r('POST', '/api-keys', 'createApiKey', 'ApiKeys', ['keys:write'], 'Create a secret key (shown once) with scopes the caller holds', { successStatus: 201, idempotencyKey: 'none' }),
  r('POST', '/api-keys/{id}/rotate', 'rotateApiKey', 'ApiKeys', ['keys:write'], 'Rotate a secret key: a new secret (shown once); the old one works for a grace period', { idempotencyKey: 'none' }),
  r('DELETE', '/api-keys/{id}', 'revokeApiKey', 'ApiKeys', ['keys:write'], 'Revoke a secret key (at once, in every API process)'),
  // PublishableKeys (spec "Authentication" 3; paths not shown)
  r('GET', '/publishable-keys', 'listPublishableKeys', 'PublishableKeys', ['pubkeys:read'], 'List publishable keys'),
  r('POST', '/publishable-keys', 'createPublishableKey', 'PublishableKeys', ['pubkeys:write'], 'Create a publishable key pinned to one agent, with allowed origins (shown once)', { successStatus: 201, idempotencyKey: 'none' }),
  r('DELETE', '/publishable-keys/{id}', 'revokePublishableKey', 'PublishableKeys', ['pubkeys:write'], 'Revoke a publishable key (at once)'),
  // Team (paths not shown in the spec; docs/team-and-oauth.md "Team")
  r('GET', '/team/members', 'listTeamMembers', 'Team', ['team:read'], 'List members and their roles'),
  r('PATCH', '/team/members/{id}', 'updateTeamMember', 'Team', ['team:write'], "Change a member's role (the last owner stays an owner)"),
  r('DELETE', '/team/members/{id}', 'removeTeamMember', 'Team', ['team:write'], 'Remove a member (their app approvals and tokens stop at once)'),
  r('GET', '/team/invitations', 'listTeamInvitations', 'Team', ['team:read'], 'List pending invitations'),
  r('POST', '/team/invitations', 'createTeamInvitation', 'Team', ['team:write'], 'Invite a person by email (single-use link, 7 days)', { successStatus: 201 }),
  r('DELETE', '/team/invitations/{id}', 'revokeTeamInvitation', 'Team', ['team:write'], 'Revoke a pending invitation'),
  r('GET', '/team/grants', 'listTeamGrants', 'Team', ['team:read'], 'List OAuth app approvals (grants) of members'),
  r('DELETE', '/team/grants/{id}', 'revokeTeamGrant', 'Team', ['team:write'], "Revoke an app's approval: its tokens stop at once"),
  // OAuth2 clients (spec "Authentication" 4; paths not shown; docs/team-and-oauth.md "Connect an app with OAuth"). Creating
  // takes no Idempotency-Key: a replay would have to store the secret the answer shows once.
  r('GET', '/oauth-clients', 'listOAuthClients', 'OAuth2', ['keys:write'], 'List OAuth clients'),
  r('POST', '/oauth-clients', 'createOAuthClient', 'OAuth2', ['keys:write'], 'Register an OAuth client (a confidential client secret is shown once)', { successStatus: 201, idempotencyKey: 'none' }),
  r('DELETE', '/oauth-clients/{id}', 'deleteOAuthClient', 'OAuth2', ['keys:write'], 'Delete an OAuth client (its grants and tokens stop at once)'),
  // Webhooks
  r('GET', '/webhooks', 'listWebhooks', 'Webhooks', ['webhooks:write'], 'List webhook endpoints'),
  r('POST', '/webhooks', 'createWebhook', 'Webhooks', ['webhooks:write'], 'Create a webhook endpoint', { successStatus: 201 }),
  r('GET', '/webhooks/{id}', 'getWebhook', 'Webhooks', ['webhooks:write'], 'Get a webhook endpoint'),
  r('PATCH', '/webhooks/{id}', 'updateWebhook', 'Webhooks', ['webhooks:write'], 'Update a webhook endpoint (enabled: false disables it)'),
  r('DELETE', '/webhooks/{id}', 'deleteWebhook', 'Webhooks', ['webhooks:write'], 'Delete a webhook endpoint'),
  r('POST', '/webhooks/{id}/rotate-secret', 'rotateWebhookSecret', 'Webhooks', ['webhooks:write'], 'Rotate the signing secret (shown once)'),
  r('POST', '/webhooks/{id}/test', 'testWebhook', 'Webhooks', ['webhooks:write'], 'Send a webhook.test event', { successStatus: 202 }),
  r('GET', '/webhooks/{id}/deliveries', 'listWebhookDeliveries', 'Webhooks', ['webhooks:write'], 'List deliveries and attempts'),
  r('POST', '/webhooks/{id}/deliveries/{deliveryId}/retry', 'retryWebhookDelivery', 'Webhooks', ['webhooks:write'], 'Retry a failed delivery', { successStatus: 202 }),
  r('POST', '/webhooks/{id}/replay', 'replayWebhook', 'Webhooks', ['webhooks:write'], 'Replay past events of a window to the endpoint', { successStatus: 202 }),
  r('GET', '/webhooks/{id}/replays/{replayId}', 'getWebhookReplay', 'Webhooks', ['webhooks:write'], 'Get a replay and its progress'),
  // Audit
  r('GET', '/audit-logs', 'listAuditLogs', 'AuditLogs', ['audit:read'], 'Audit log entries'),
  // Outbound
  r('POST', '/contact-lists', 'createContactList', 'Outbound', ['outbound:write'], 'Create a contact list', { successStatus: 201 }),
  r('GET', '/contact-lists', 'listContactLists', 'Outbound', ['outbound:read'], 'List contact lists'),
  r('GET', '/contact-lists/{id}', 'getContactList', 'Outbound', ['outbound:read'], 'Get a contact list with its import progress'),
  r('POST', '/contact-lists/{id}/imports', 'importContacts', 'Outbound', ['outbound:write'], 'Import and scrub a CSV (asynchronous)', { successStatus: 202 }),
  r('GET', '/contact-lists/{id}/contacts', 'listContactListContacts', 'Outbound', ['outbound:read'], 'Rows of a list with their scrub outcome'),
  r('POST', '/do-not-call', 'addDoNotCall', 'Outbound', ['outbound:write'], "Add numbers to the organization's do-not-call list"),
  r('POST', '/campaigns', 'createCampaign', 'Outbound', ['outbound:write'], 'Create a campaign (draft)', { successStatus: 201 }),
  r('GET', '/campaigns', 'listCampaigns', 'Outbound', ['outbound:read'], 'List campaigns with live counters'),
  r('GET', '/campaigns/{id}', 'getCampaign', 'Outbound', ['outbound:read'], 'Get a campaign with live counters'),
  r('GET', '/campaigns/{id}/attempts', 'listCampaignAttempts', 'Outbound', ['outbound:read'], "A campaign's call attempts"),
  r('POST', '/campaigns/{id}/launch', 'launchCampaign', 'Outbound', ['outbound:write'], 'Launch: one call attempt per valid contact, dialed in the calling window'),
  r('POST', '/campaigns/{id}/pause', 'pauseCampaign', 'Outbound', ['outbound:write'], 'Pause dialing'),
  r('POST', '/campaigns/{id}/resume', 'resumeCampaign', 'Outbound', ['outbound:write'], 'Resume dialing'),
  r('POST', '/campaigns/{id}/cancel', 'cancelCampaign', 'Outbound', ['outbound:write'], 'Cancel: undialed attempts are cancelled'),
  // Calls (paths not shown in the spec; docs/api-notes.md "Calls on demand"): one call placed on demand,
  // and every call read back (reading a call is calls:read, spec "Scope rules" 1).
  r('POST', '/calls', 'createCall', 'Outbound', ['outbound:write'], 'Place one outbound call answered by an agent (202; workflow voice-call/{callId}; Idempotency-Key required)', { successStatus: 202, idempotencyKey: 'required' }),
  r('GET', '/calls', 'listCalls', 'Observe', ['calls:read'], 'List calls (inbound, campaign and on demand), newest first; filters direction, agentId, status, from, to'),
  r('GET', '/calls/{id}', 'getCall', 'Observe', ['calls:read'], 'Get a call'),
  // SMS
  r('GET', '/sms', 'getSMSRegistration', 'SMS', ['sms:read'], 'Get the 10DLC registration'),
  r('PUT', '/sms', 'saveSMSRegistration', 'SMS', ['sms:write'], 'Save the 10DLC registration draft'),
  r('POST', '/sms/review', 'reviewSMSRegistration', 'SMS', ['sms:write'], 'Free compliance review of the draft'),
  r('POST', '/sms/submit', 'submitSMSRegistration', 'SMS', ['sms:write'], 'Submit the registration to the carrier (Idempotency-Key)', { idempotencyKey: 'optional' }),
  r('POST', '/sms/messages', 'sendSMSMessage', 'SMS', ['sms:send'], "Send one text from the organization's own number", { successStatus: 202 }),
  r('PUT', '/sms/contacts/{e164}/consent', 'recordSMSConsent', 'SMS', ['sms:write'], 'Record express consent'),
  r('DELETE', '/sms/contacts/{e164}/consent', 'withdrawSMSConsent', 'SMS', ['sms:write'], 'Withdraw consent'),
  r('GET', '/sms/media/{id}', 'getSMSMedia', 'SMS', ['sms:read'], 'Short-lived link to a text attachment'),
  r('GET', '/sms/media/{id}/content', 'getSMSMediaContent', 'SMS', [], 'Bytes of a text attachment through a signed link (expires, signature); no API key', { auth: 'none' }),
  r('GET', '/sms/contacts', 'listSMSContacts', 'SMS', ['sms:read'], 'Contact roster with consent and opt-out state'),
  r('GET', '/sms/opt-outs', 'listSMSOptOuts', 'SMS', ['sms:read'], 'Opt-out list (suppressions)'),
  r('GET', '/sms/consent-export', 'exportSMSConsent', 'SMS', ['sms:read'], 'Proof-of-consent export (CSV)'),
  r('GET', '/sms/numbers', 'listSMSNumbers', 'SMS', ['sms:read'], 'Numbers with their SMS toggle and the registration status'),
  r('PUT', '/numbers/{id}/sms', 'setNumberSMS', 'SMS', ['sms:write'], 'Turn SMS on or off for a number'),
  r('POST', '/sms/provider-callbacks/{provider}', 'receiveSMSProviderCallback', 'SMS', [], 'Carrier/telephony callback, authenticated by its HMAC signature (X-Carrier-Signature)', { auth: 'none' }),
  // Variables, escalation destinations, onboarding, meta and the scopes without a named group (paths not
  // shown in the spec; docs/api-notes.md "Variables, escalation, onboarding, meta and settings").
  r('GET', '/variables', 'listVariables', 'Variables', ['agents:read'], 'Organization variables (secret values never)'),
  r('POST', '/variables', 'createVariable', 'Variables', ['agents:write'], 'Create a variable (a secret value is write-only)', { successStatus: 201 }),
  r('GET', '/variables/{id}', 'getVariable', 'Variables', ['agents:read'], 'Get a variable'),
  r('PATCH', '/variables/{id}', 'updateVariable', 'Variables', ['agents:write'], "Change a variable's description or value"),
  r('DELETE', '/variables/{id}', 'deleteVariable', 'Variables', ['agents:write'], 'Delete a variable no agent refers to'),
  r('GET', '/escalation-destinations', 'listEscalationDestinations', 'Support', ['escalation_destinations:read'], 'Escalation destinations'),
  r('POST', '/escalation-destinations', 'createEscalationDestination', 'Support', ['escalation_destinations:write'], 'Create an escalation destination (phone, SIP URI, e-mail or webhook, with hours)', { successStatus: 201 }),
  r('GET', '/escalation-destinations/{id}', 'getEscalationDestination', 'Support', ['escalation_destinations:read'], 'Get an escalation destination'),
  r('PATCH', '/escalation-destinations/{id}', 'updateEscalationDestination', 'Support', ['escalation_destinations:write'], 'Change an escalation destination'),
  r('DELETE', '/escalation-destinations/{id}', 'deleteEscalationDestination', 'Support', ['escalation_destinations:write'], 'Delete an escalation destination nothing targets'),
  r('GET', '/presence', 'listPresence', 'Support', ['escalation_destinations:read'], "Presence of the teammates who take escalations"),
  r('PUT', '/presence/{teammate}', 'setPresence', 'Support', ['presence:write'], "Set a teammate's presence"),
  r('GET', '/onboarding', 'getOnboarding', 'Onboarding', [], 'Setup checklist computed from the organization\'s state (any secret key)'),
  r('GET', '/meta', 'getMeta', 'Meta', [], 'Service and API version, scope catalogue, limits, the caller (any secret key)'),
  r('GET', '/dashboards', 'listDashboards', 'Dashboards', ['dashboards:read'], 'Saved dashboards'),
  r('POST', '/dashboards', 'createDashboard', 'Dashboards', ['dashboards:write'], 'Save a dashboard', { successStatus: 201 }),
  r('GET', '/dashboards/{id}', 'getDashboard', 'Dashboards', ['dashboards:read'], 'Get a dashboard'),
  r('PATCH', '/dashboards/{id}', 'updateDashboard', 'Dashboards', ['dashboards:write'], 'Change a dashboard'),
  r('DELETE', '/dashboards/{id}', 'deleteDashboard', 'Dashboards', ['dashboards:write'], 'Delete a dashboard'),
  r('GET', '/dashboards/{id}/data', 'getDashboardData', 'Dashboards', ['dashboards:read', 'analytics:read'], "A dashboard's figures now"),
  r('GET', '/reports', 'listReports', 'Reports', ['reports:read'], 'Reports and their files'),
  r('POST', '/reports', 'createReport', 'Reports', ['reports:write'], 'Export conversations, usage or consent as CSV, on demand or on a schedule (202; workflow report-export/{id})', { successStatus: 202 }),
  r('GET', '/reports/{id}', 'getReport', 'Reports', ['reports:read'], 'Get a report and its files'),
  r('POST', '/reports/{id}/cancel', 'cancelReport', 'Reports', ['reports:write'], 'Cancel a scheduled or unfinished report'),
  r('GET', '/reports/{id}/files/{fileId}', 'downloadReportFile', 'Reports', ['reports:read'], 'Download a report file (text/csv)'),
  r('GET', '/numbers/{id}/settings', 'getPhoneSettings', 'Phone', ['phone:read'], "A number's phone settings: voicemail, recording consent, business hours"),
  r('PUT', '/numbers/{id}/settings', 'putPhoneSettings', 'Phone', ['phone:write'], "Replace a number's phone settings"),
  // Reserved (spec "Scope rules" 5): answer 403 even for correctly scoped calls.
  r('GET', '/escalation-policies', 'listEscalationPolicies', 'Support', ['escalation_policies:read'], 'Reserved', { reserved: true }),
  r('PUT', '/escalation-policies', 'putEscalationPolicies', 'Support', ['escalation_policies:write'], 'Reserved', { reserved: true }),
  r('GET', '/escalations', 'listEscalations', 'Support', ['escalations:read'], 'Reserved', { reserved: true }),
  r('POST', '/escalations', 'initiateEscalation', 'Support', ['escalations:initiate'], 'Reserved', { reserved: true }),
  r('POST', '/escalations/{id}/claim', 'claimEscalation', 'Support', ['escalations:claim'], 'Reserved', { reserved: true }),
  r('POST', '/escalations/{id}/respond', 'respondEscalation', 'Support', ['escalations:respond'], 'Reserved', { reserved: true }),
  r('POST', '/escalations/{id}/resolve', 'resolveEscalation', 'Support', ['escalations:resolve'], 'Reserved', { reserved: true }),
  r('POST', '/analytics/events', 'recordAnalyticsEvent', 'Observe', ['analytics:write'], 'Reserved', { reserved: true }),
];

/** `/agents/{id}` → `/agents/:id` (Koa router syntax). */
export function toKoaPath(path: string): string {
  return path.replace(/\{([A-Za-z0-9_]+)\}/g, ':$1');
}
