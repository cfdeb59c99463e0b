/**
 * `GET /models` and `GET /models/{id}` (listModels, getModel; chat:read): the organization's agents as OpenAI models
 * (OpenAI API reference "Models": `{object: "list", data: [{id, object: "model", created, owned_by}]}`, no envelope),
 * so an OpenAI client lists what `POST /chat/completions` accepts as `model` (docs/api-notes.md "OpenAI compatibility"):
 * `agt_…` for an agent's published version, `agt_…@draft` for its draft, `agt_…@vN` for each frozen version. `created`
 * is Unix seconds — the agent's creation for the draft, the version's publication otherwise; `owned_by` is the
 * organization id. Errors are in OpenAI's shape (api/middleware/problem.ts).
 */
import type { Handler } from '../context';
import { orgOf } from '../http';
import { ApiError } from '../../domain/errors';
import { listAgentModels, type AgentModelRow } from '../../db/repositories/agentVersions';
import type { OpenAiModel, OpenAiModelList } from '../../schemas/types/chat';

/** The models one agent offers, in the order `agt_…`, `agt_…@draft`, `agt_…@v1`, `@v2`, … */
function modelsOf(row: AgentModelRow, orgId: string): OpenAiModel[] {
  const seconds = (isoTime: string) => Math.floor(Date.parse(isoTime) / 1000);
  const model = (id: string, created: string): OpenAiModel => ({ id, object: 'model', created: seconds(created), owned_by: orgId });
  const published = row.versions.find((v) => v.number === row.publishedNumber);
  return [
    ...(published ? [model(row.agentId, published.createdAt)] : []),
    model(`${row.agentId}@draft`, row.createdAt),
    ...row.versions.map((v) => model(`${row.agentId}@v${v.number}`, v.createdAt)),
  ];
}

/** GET /models (listModels, chat:read) → `{object: "list", data: [model…]}` for every agent of the organization. */
export const listModels: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const list: OpenAiModelList = { object: 'list', data: (await listAgentModels(db, orgId)).flatMap((r) => modelsOf(r, orgId)) };
  return { rawJson: JSON.stringify(list) };
};

/** GET /models/{id} (getModel, chat:read) → one model. 404 `model_not_found` (param `model`) for an id not listed by GET /models. */
export const getModel: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const id = String(ctx.params.id ?? '');
  const agentId = /^agt_[A-Za-z0-9]{8,40}/.exec(id)?.[0];
  const found = agentId ? (await listAgentModels(db, orgId, agentId)).flatMap((r) => modelsOf(r, orgId)).find((m) => m.id === id) : undefined;
  if (!found) throw new ApiError(404, 'model_not_found', `The model '${id}' does not exist (models are this organization's agents: GET /models)`, { errors: [{ field: 'model', message: 'names no agent, draft or version of this organization' }] });
  return { rawJson: JSON.stringify(found) };
};

/** Handlers of this area by operationId. */
export const handlers = { listModels, getModel };
