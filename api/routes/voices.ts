/**
 * Voices handlers (spec Voice rows): the sandbox voice catalogue (`GET /voices`, `POST /voices/search`)
 * and `PUT /agents/{id}/voice`, an edit of the draft (bumps its version; honours `If-Match` when sent).
 */
import type { Handler } from '../context';
import { ApiError, validationError } from '../../domain/errors';
import { validateBody } from '../../domain/validation';
import { encodeCursor } from '../../db/pagination';
import { getAgent, setAgentFields } from '../../db/repositories/agents';
import type { AgentVoiceSet, Voice, VoiceSearch } from '../../schemas/types/voices';
import { etag, runDraftEdit } from '../agents/http';
import { decodeCursorOr400, orgOf, pageParams } from '../http';
import { toAgentView } from '../agents/present';
import { findVoice, searchVoices as search, VOICES } from '../../domain/agents/voices';
import { param } from './agents';

/** One page of a static, id-ordered list. */
function pageOf(list: readonly Voice[], limit: number, cursor?: string) {
  let start = 0;
  if (cursor) {
    const after = decodeCursorOr400('voice.id', cursor, /^voice_[a-z0-9_]{1,64}$/);
    start = list.findIndex((v) => v.id > String(after));
    if (start < 0) start = list.length;
  }
  const items = list.slice(start, start + limit);
  const hasMore = start + limit < list.length;
  return { items, hasMore, nextCursor: hasMore ? encodeCursor('voice.id', items[items.length - 1].id) : null };
}

/** GET /voices (`?language=` filters): the catalogue, ordered by id, cursor-paginated. */
export const listVoices: Handler = async (ctx) => {
  const { limit, cursor } = pageParams(ctx);
  const language = typeof ctx.query.language === 'string' ? ctx.query.language : undefined;
  return { data: pageOf(language ? search({ language }) : VOICES, limit, cursor) };
};

/** POST /voices/search: voices matching every criterion (query words, language, gender, tags). */
export const searchVoices: Handler = async (ctx) => {
  const body = validateBody<VoiceSearch>('VoiceSearch', ctx.request.body ?? {});
  const { limit, cursor } = pageParams(ctx);
  return { data: pageOf(search(body), limit, cursor) };
};

/**
 * PUT /agents/{id}/voice `{voiceId}`: sets the draft's voice. 400 for an unknown voice, 422
 * `voice_language_mismatch` when it does not speak the agent's language. Answers the agent.
 */
export const setAgentVoice: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const id = param(ctx, 'id');
  const body = validateBody<AgentVoiceSet>('AgentVoiceSet', ctx.request.body);
  const voice = findVoice(body.voiceId);
  if (!voice) throw validationError([{ field: 'voiceId', message: 'is not a voice of GET /voices' }]);
  await runDraftEdit(ctx, db, id, async (trx, agent) => {
    if (!voice.languages.includes(agent.language)) {
      throw new ApiError(422, 'voice_language_mismatch', `Voice "${voice.id}" does not speak ${agent.language}; it speaks ${voice.languages.join(', ')}`, {
        errors: [{ field: 'voiceId', message: `does not speak ${agent.language}` }],
      });
    }
    await setAgentFields(trx, orgId, id, { voiceId: voice.id });
  });
  const agent = (await getAgent(db, orgId, id))!;
  return { data: toAgentView(agent), headers: etag(agent.version) };
};

/** Handlers of this area by operationId. */
export const handlers = { listVoices, searchVoices, setAgentVoice };

/** Schemas of this area's operations. */
export const routeSchemas = {
  listVoices: { responseSchema: 'VoicePage' },
  searchVoices: { requestSchema: 'VoiceSearch', responseSchema: 'VoicePage' },
  setAgentVoice: { requestSchema: 'AgentVoiceSet', responseSchema: 'Agent' },
};
