/**
 * Outbound voice handlers (spec "Outbound": contact lists with import and scrub, campaigns with launch,
 * pause, resume, cancel; paths and payloads "not shown", decided in docs/api-notes.md; docs/voice.md "Outbound voice campaigns").
 *
 * - Contact lists: `POST /contact-lists`, `GET /contact-lists`, `GET /contact-lists/{id}`,
 *   `POST /contact-lists/{id}/imports` {fileId} (202; asynchronous, workflow `contact-import/{listId}`),
 *   `GET /contact-lists/{id}/contacts?status=accepted|rejected`, `POST /do-not-call` {numbers}.
 * - Campaigns: `POST /campaigns`, `GET /campaigns`, `GET /campaigns/{id}` (live counters),
 *   `GET /campaigns/{id}/attempts`, `POST /campaigns/{id}/launch|pause|resume|cancel`
 *   (state machine in api/outbound/stateMachine.ts; 409 `invalid_transition`).
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import type { AppContext, AppDeps, Handler } from '../context';
import { ApiError, notFound, validationError } from '../../domain/errors';
import { validateBody } from '../../domain/validation';
import { listHandler, orgOf, pageParams, paged, requireOwned, requireTemporal, workflowUiUrl } from '../http';
import { isE164 } from '../../domain/sms/draftChecks';
import { CsvFormatError, checkContactCsv } from '../../domain/outbound/csv';
import { DEFAULT_WINDOW, formatClock, parseClock, windowProblems } from '../../domain/outbound/callingWindow';
import { purposeIsDialable, purposeNeedsConsent } from '../../domain/outbound/scrub';
import { transitionOr409, type CampaignAction } from '../../domain/outbound/stateMachine';
import { addDoNotCall, beginImport, createContactList, getContactList, ImportStateError, listContactLists, listListContacts } from '../../db/repositories/contactLists';
import {
  agentPublication,
  campaignCounters,
  cancelPendingAttempts,
  createCampaign,
  getCampaign,
  insertAttempts,
  listAttempts,
  listCampaigns,
  lockCampaign,
  setCampaignStatus,
  toCampaign,
} from '../../db/repositories/campaigns';
import { getNumber } from '../../db/repositories/numbers';
import { attachUpload, getUploadContent } from '../../db/repositories/uploads';
import { emitEvent } from '../../events/emit';
import { workflowIds } from '../../temporal.config';
import { transactionWithStarts, type WorkflowStarts } from '../../services/workflowStarts';
import type { CampaignCreate, ContactImportRequest, ContactListCreate, DoNotCallAdd } from '../../schemas/types/outbound';



/** Defaults of a campaign (docs/voice.md "Outbound voice campaigns"). */
export const CAMPAIGN_DEFAULTS = { maxConcurrentCalls: 10, maxAttempts: 3, retryDelayMinutes: 60 } as const;

const ATTEMPT_STATUSES = ['pending', 'dialing', 'answered', 'voicemail', 'busy', 'no_answer', 'failed', 'cancelled'];

// ─── Contact lists ───────────────────────────────────────────────────────────────────────────────

/** POST /contact-lists (createContactList, outbound:write) → 201 with an empty list. */
export const createContactListHandler: Handler = async (ctx, { db }) => {
  const body = validateBody<ContactListCreate>('ContactListCreate', ctx.request.body);
  if (!body.name.trim()) throw validationError([{ field: 'name', message: 'must contain some non-blank text' }]);
  return { data: await createContactList(db, orgOf(ctx), { name: body.name.trim(), purpose: body.purpose ?? 'informational' }), status: 201 };
};

/** GET /contact-lists (listContactLists, outbound:read). */
export const listContactListsHandler: Handler = listHandler(listContactLists);

/** GET /contact-lists/{id} (getContactList, outbound:read): the list with its import progress and counts by outcome. */
export const getContactListHandler: Handler = async (ctx, { db }) => {
  const list = await getContactList(db, orgOf(ctx), ctx.params.id);
  if (!list) throw notFound('Contact list', 'contact_list_not_found');
  return { data: list };
};

/**
 * POST /contact-lists/{id}/imports {fileId, columnMapping?} (importContacts, outbound:write) → 202 with
 * the list (import status `importing`). The file is read once up front: a malformed CSV answers 400
 * `validation_error` on `fileId` naming row, column and line (also as `row`/`column`/`line` members).
 * 404 `contact_list_not_found` / `file_expired`; 409 `import_in_progress` / `list_already_imported`
 * (lists are imported once; a failed import may be retried); 503 without Temporal.
 */
export const importContacts: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const body = validateBody<ContactImportRequest>('ContactImportRequest', ctx.request.body);
  const listId = ctx.params.id;
  if (!(await getContactList(deps.db, orgId, listId))) throw notFound('Contact list', 'contact_list_not_found');
  // The import starts once the list's file and status have committed (services/workflowStarts.ts): its first
  // read of the upload must find it.
  const list = await transactionWithStarts({ db: deps.db, temporal: deps.temporal, log: ctx.state.log }, async (trx, starts) => {
    const upload = await attachUpload(trx, orgId, body.fileId);
    if (!upload) throw new ApiError(404, 'file_expired', `File ${body.fileId} does not exist or has expired; upload it again with POST /uploads`, { errors: [{ field: 'fileId', message: 'no unexpired upload with this id' }] });
    const content = await getUploadContent(trx, orgId, body.fileId);
    try {
      await checkContactCsv(content!.data, body.columnMapping);
    } catch (err) {
      if (!(err instanceof CsvFormatError)) throw err;
      throw new ApiError(400, 'validation_error', `The CSV is malformed: ${err.message}`, {
        errors: [{ field: 'fileId', message: err.message }],
        extra: { row: err.row, column: err.column, line: err.line },
      });
    }
    let l;
    try {
      l = await beginImport(trx, orgId, listId, body.fileId, body.columnMapping ?? null);
    } catch (err) {
      if (err instanceof ImportStateError) {
        throw err.status === 'importing'
          ? new ApiError(409, 'import_in_progress', 'This list is being imported; follow GET /contact-lists/{id}')
          : new ApiError(409, 'list_already_imported', 'This list is already imported; lists are imported once, create a new list');
      }
      throw err;
    }
    if (!l) throw notFound('Contact list', 'contact_list_not_found');
    requireTemporal(deps);
    await starts.record(trx, 'contactImport', { workflowId: workflowIds.contactImport(listId), args: [{ orgId, listId }], orgId, resourceId: listId });
    return l;
  });
  return { data: list, status: 202 };
};

/** GET /contact-lists/{id}/contacts?status=accepted|rejected (listContactListContacts, outbound:read): rows in file order with their scrub outcome. */
export const listContactListContacts: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const page = pageParams(ctx);
  const raw = ctx.query.status;
  const status = Array.isArray(raw) ? raw[0] : raw;
  if (status !== undefined && status !== 'accepted' && status !== 'rejected') throw validationError([{ field: 'status', message: 'must be one of: accepted, rejected' }]);
  if (!(await getContactList(db, orgId, ctx.params.id))) throw notFound('Contact list', 'contact_list_not_found');
  return { data: await paged(() => listListContacts(db, orgId, ctx.params.id, { ...page, status })) };
};

/** POST /do-not-call {numbers} (addDoNotCall, outbound:write): numbers never to call (scrubbed at import). */
export const addDoNotCallHandler: Handler = async (ctx, { db }) => {
  const body = validateBody<DoNotCallAdd>('DoNotCallAdd', ctx.request.body);
  const bad = body.numbers.map((n, i) => [n, i] as const).filter(([n]) => !isE164(n) || !n.startsWith('+1'));
  if (bad.length) throw validationError(bad.map(([, i]) => ({ field: `numbers.${i}`, message: 'must be a US number in E.164, e.g. +14155550100' })));
  return { data: { added: await addDoNotCall(db, orgOf(ctx), body.numbers) } };
};

// ─── Campaigns ───────────────────────────────────────────────────────────────────────────────────

/**
 * POST /campaigns (createCampaign, outbound:write) → 201 draft. 400 for the body (a window wider than
 * 08:00–21:00 names `callingWindow.start`/`.end`); 404 `agent_not_found` / `number_not_found` (not a
 * purchased number of the organization) / `contact_list_not_found`; 409 `no_published_version`;
 * 422 `list_not_scrubbed_for_purpose` (a marketing campaign needs a list scrubbed for consent).
 */
export const createCampaignHandler: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const body = validateBody<CampaignCreate>('CampaignCreate', ctx.request.body);
  if (!body.name.trim()) throw validationError([{ field: 'name', message: 'must contain some non-blank text' }]);
  const window = body.callingWindow ?? { start: formatClock(DEFAULT_WINDOW.startMinutes), end: formatClock(DEFAULT_WINDOW.endMinutes) };
  const wp = windowProblems(window);
  if (wp.length) throw validationError(wp);
  await requireOwned(db, orgId, [
    { field: 'agentId', kind: 'agent', id: body.agentId },
    { field: 'callerIdNumberId', kind: 'number', id: body.callerIdNumberId },
    { field: 'contactListId', kind: 'contactList', id: body.contactListId },
  ]);
  const agent = await agentPublication(db, orgId, body.agentId);
  if (!agent.exists) throw notFound('Agent', 'agent_not_found');
  if (!agent.publishedVersionId) throw new ApiError(409, 'no_published_version', 'The agent has no published version; publish it before using it in a campaign');
  const number = await getNumber(db, orgId, body.callerIdNumberId);
  if (!number || number.status !== 'purchased') throw new ApiError(404, 'number_not_found', 'The caller-id number is not a purchased number of this organization', { errors: [{ field: 'callerIdNumberId', message: 'no purchased number with this id' }] });
  const list = await getContactList(db, orgId, body.contactListId);
  if (!list) throw notFound('Contact list', 'contact_list_not_found');
  if (purposeNeedsConsent(body.purpose) && list.purpose !== body.purpose) {
    throw new ApiError(422, 'list_not_scrubbed_for_purpose', `A ${body.purpose} campaign needs a list created with purpose ${body.purpose} (scrubbed for consent)`);
  }
  const campaign = await createCampaign(db, orgId, {
    name: body.name.trim(),
    agentId: body.agentId,
    callerIdNumberId: number.id,
    callerId: number.e164,
    listId: list.id,
    purpose: body.purpose,
    windowStartMinutes: parseClock(window.start),
    windowEndMinutes: parseClock(window.end),
    daysOfWeek: body.daysOfWeek ?? ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'],
    maxConcurrentCalls: body.maxConcurrentCalls ?? CAMPAIGN_DEFAULTS.maxConcurrentCalls,
    maxAttempts: body.maxAttempts ?? CAMPAIGN_DEFAULTS.maxAttempts,
    retryDelayMinutes: body.retryDelayMinutes ?? CAMPAIGN_DEFAULTS.retryDelayMinutes,
  });
  return { data: campaign, status: 201 };
};

/** GET /campaigns (listCampaigns, outbound:read), with live counters. */
export const listCampaignsHandler: Handler = listHandler(listCampaigns);

/** GET /campaigns/{id} (getCampaign, outbound:read), with live counters. */
export const getCampaignHandler: Handler = async (ctx, deps) => {
  const c = await getCampaign(deps.db, orgOf(ctx), ctx.params.id);
  if (!c) throw notFound('Campaign', 'campaign_not_found');
  const temporalUiUrl = c.launchedAt ? workflowUiUrl(deps, workflowIds.campaign(c.id)) : undefined;
  return { data: temporalUiUrl ? { ...c, temporalUiUrl } : c };
};

/** GET /campaigns/{id}/attempts?status= (listCampaignAttempts, outbound:read): one attempt per contact, in launch order. */
export const listCampaignAttempts: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const page = pageParams(ctx);
  const raw = ctx.query.status;
  const status = Array.isArray(raw) ? raw[0] : raw;
  if (status !== undefined && !ATTEMPT_STATUSES.includes(status)) throw validationError([{ field: 'status', message: `must be one of: ${ATTEMPT_STATUSES.join(', ')}` }]);
  if (!(await getCampaign(db, orgId, ctx.params.id))) throw notFound('Campaign', 'campaign_not_found');
  return { data: await paged(() => listAttempts(db, orgId, ctx.params.id, { ...page, status })) };
};

/** Applies an action in one transaction with its `campaign.updated` event; `during` runs before the status write. */
async function transition(ctx: AppContext, deps: AppDeps, action: CampaignAction, during?: (trx: any, row: any, starts: WorkflowStarts) => Promise<{ agentVersionId?: string } | void>) {
  const orgId = orgOf(ctx);
  const id = ctx.params.id;
  return transactionWithStarts({ db: deps.db, temporal: deps.temporal, log: ctx.state.log }, async (trx, starts) => {
    const row = await lockCampaign(trx, orgId, id);
    if (!row) throw notFound('Campaign', 'campaign_not_found');
    const to = transitionOr409(row.status, action);
    const extra = (await during?.(trx, row, starts)) ?? {};
    const updated = await setCampaignStatus(trx, orgId, id, to, extra);
    const counters = (await campaignCounters(trx, orgId, [id])).get(id)!;
    await emitEvent(trx, orgId, 'campaign.updated', { campaignId: id, status: to, previousStatus: row.status, counts: { ...counters } });
    return { previous: row.status as string, campaign: toCampaign(updated, counters) };
  });
}

/**
 * POST /campaigns/{id}/launch (launchCampaign, outbound:write): draft → running. Writes one attempt per
 * accepted contact in one transaction; `campaign/{id}` starts once it has committed. 409 `invalid_transition`;
 * 422 `purpose_not_dialable` (only informational campaigns are dialed); 409 `list_not_ready`;
 * 409 `no_published_version`; 503 without Temporal (nothing changes).
 */
export const launchCampaign: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const { campaign } = await transition(ctx, deps, 'launch', async (trx, row, starts) => {
    if (!purposeIsDialable(row.purpose)) throw new ApiError(422, 'purpose_not_dialable', `Only informational campaigns are dialed; this one is ${row.purpose}`);
    const list = await getContactList(trx, orgId, row.list_id);
    if (!list || list.import.status !== 'ready') throw new ApiError(409, 'list_not_ready', `The contact list is ${list?.import.status ?? 'missing'}; launch once its import is ready`);
    const agent = await agentPublication(trx, orgId, row.agent_id);
    if (!agent.publishedVersionId) throw new ApiError(409, 'no_published_version', 'The agent has no published version');
    await insertAttempts(trx, orgId, row.id, row.list_id);
    requireTemporal(deps);
    // The dialer starts once the attempts and the `running` status have committed (services/workflowStarts.ts).
    await starts.record(trx, 'campaignDialer', { workflowId: workflowIds.campaign(row.id), args: [{ orgId, campaignId: row.id }], orgId, resourceId: row.id });
    return { agentVersionId: agent.publishedVersionId };
  });
  return { data: campaign };
};

async function signal(ctx: AppContext, deps: AppDeps, campaignId: string, name: 'pause' | 'resume' | 'cancel'): Promise<void> {
  if (!deps.temporal) return; // the dialer re-reads the stored status; the signal only makes it immediate
  try {
    await deps.temporal.client.workflow.getHandle(workflowIds.campaign(campaignId)).signal(name);
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) ctx.state.log.warn({ err, campaignId, signal: name }, 'could not signal the campaign dialer');
  }
}

/** POST /campaigns/{id}/pause (pauseCampaign, outbound:write): running → paused; no new dials, calls in progress finish. */
export const pauseCampaign: Handler = async (ctx, deps) => {
  const { campaign } = await transition(ctx, deps, 'pause');
  await signal(ctx, deps, campaign.id, 'pause');
  return { data: campaign };
};

/** POST /campaigns/{id}/resume (resumeCampaign, outbound:write): paused → running. */
export const resumeCampaign: Handler = async (ctx, deps) => {
  const { campaign } = await transition(ctx, deps, 'resume');
  await signal(ctx, deps, campaign.id, 'resume');
  return { data: campaign };
};

/** POST /campaigns/{id}/cancel (cancelCampaign, outbound:write): draft | running | paused → cancelled; undialed attempts become cancelled. */
export const cancelCampaign: Handler = async (ctx, deps) => {
  const orgId = orgOf(ctx);
  const { campaign, previous } = await transition(ctx, deps, 'cancel', async (trx, row) => {
    await cancelPendingAttempts(trx, orgId, row.id);
  });
  if (previous !== 'draft') await signal(ctx, deps, campaign.id, 'cancel');
  return { data: campaign };
};

/** Handlers of this area by operationId (api/routes/index.ts). */
export const handlers = {
  createContactList: createContactListHandler,
  listContactLists: listContactListsHandler,
  getContactList: getContactListHandler,
  importContacts,
  listContactListContacts,
  addDoNotCall: addDoNotCallHandler,
  createCampaign: createCampaignHandler,
  listCampaigns: listCampaignsHandler,
  getCampaign: getCampaignHandler,
  listCampaignAttempts,
  launchCampaign,
  pauseCampaign,
  resumeCampaign,
  cancelCampaign,
};

/** Schemas of this area's operations. */
export const routeSchemas = {
  createContactList: { requestSchema: 'ContactListCreate', responseSchema: 'ContactList' },
  listContactLists: { responseSchema: 'ContactListPage' },
  getContactList: { responseSchema: 'ContactList' },
  importContacts: { requestSchema: 'ContactImportRequest', responseSchema: 'ContactList' },
  listContactListContacts: { responseSchema: 'ContactPage' },
  addDoNotCall: { requestSchema: 'DoNotCallAdd', responseSchema: 'DoNotCallResult' },
  createCampaign: { requestSchema: 'CampaignCreate', responseSchema: 'Campaign' },
  listCampaigns: { responseSchema: 'CampaignPage' },
  getCampaign: { responseSchema: 'Campaign' },
  listCampaignAttempts: { responseSchema: 'CallAttemptPage' },
  launchCampaign: { responseSchema: 'Campaign' },
  pauseCampaign: { responseSchema: 'Campaign' },
  resumeCampaign: { responseSchema: 'Campaign' },
  cancelCampaign: { responseSchema: 'Campaign' },
};
