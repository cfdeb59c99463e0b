/**
 * Test handlers (spec Test row, "Agent lifecycle" rules 1-2): `POST /agents/{agentId}/talk-token` issues
 * a short-lived signed token bound to the published version; for an agent never published it answers
 * 409 `no_published_version` unless `draftMode: true`, which binds the token to the current draft
 * version instead. `simulate` is not built yet (501 from the route table).
 */
import crypto from 'node:crypto';
import type { Handler } from '../context';
import { ApiError } from '../../domain/errors';
import { validateBody } from '../../domain/validation';
import { talkTokenSecret } from '../../db/repositories/agentVersions';
import type { TalkToken, TalkTokenRequest } from '../../schemas/types/agents';
import { requireAgent } from '../agents/http';
import { signTalkToken } from '../agents/talkToken';
import { param } from './agents';
import { orgOf } from '../http';

/** Default talk-token lifetime in seconds. */
export const DEFAULT_TALK_TOKEN_TTL_SECONDS = 300;

/** POST /agents/{agentId}/talk-token `{draftMode?, ttlSeconds?, channel?}` → TalkToken (201). */
export const createTalkToken: Handler = async (ctx, { db }) => {
  const orgId = orgOf(ctx);
  const body = validateBody<TalkTokenRequest>('TalkTokenRequest', ctx.request.body ?? {});
  const agent = await requireAgent(db, orgId, param(ctx, 'agentId'));
  const draftMode = body.draftMode === true;
  if (!draftMode && !agent.publishedVersionId) {
    throw new ApiError(409, 'no_published_version', 'The agent has never been published; publish it, or ask for a draft-mode token with draftMode: true');
  }
  const channel = body.channel ?? 'voice';
  const exp = Math.floor(Date.now() / 1000) + (body.ttlSeconds ?? DEFAULT_TALK_TOKEN_TTL_SECONDS);
  const token = signTalkToken(
    {
      v: 1,
      org: orgId,
      agt: agent.id,
      ver: draftMode ? null : agent.publishedVersionId,
      dv: draftMode ? agent.version : null,
      ch: channel,
      exp,
      jti: crypto.randomUUID(),
    },
    await talkTokenSecret(db, orgId),
  );
  const data: TalkToken = {
    token,
    agentId: agent.id,
    versionId: draftMode ? null : agent.publishedVersionId,
    draftVersion: draftMode ? agent.version : null,
    mode: draftMode ? 'draft' : 'published',
    channel,
    expiresAt: new Date(exp * 1000).toISOString(),
  };
  return { data, status: 201, headers: { 'Cache-Control': 'no-store' } };
};

/** Handlers of this area by operationId. */
export const handlers = { createTalkToken };

/** Schemas of this area's operations. */
export const routeSchemas = {
  createTalkToken: { requestSchema: 'TalkTokenRequest', responseSchema: 'TalkToken' },
};
