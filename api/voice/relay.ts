/**
 * The ConversationRelay WebSocket endpoint (docs/voice.md): `GET /api/v1/voice/relay` upgraded
 * to a WebSocket (the `ws` library, on the API's own HTTP server), opened by a carrier with
 * `?ref=vrf_…` (the relay reference of a voice webhook's markup) or by the talk page with
 * `?token=tt_…` (a voice talk token), or by the chat widget with `?token=wvt_…` (a widget voice token,
 * api/widgetVoice.ts: from its page origin only, re-checked like a talk token and also ended once its publishable
 * key, that key's origin list or the widget changes). The credential is checked before the upgrade: anything else is
 * answered 401 and the socket destroyed. Each socket runs one {@link RelaySession}; one session's failure
 * closes that socket only. A talk-token socket re-checks its token's signature every
 * {@link TALK_TOKEN_RECHECK_MS} ms and closes (1008) once the organization's talk-token secret was rotated
 * (docs/security.md "Revocation"). With tracing on, the session's `voice.call` span continues the trace the socket
 * was opened in ({@link relayTraceContext}).
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Logger } from 'pino';
import type { ConversationDeps } from '../../services/conversations/service';
import { RelaySession, CLOSE, type RelayGrant, type RelayHooks } from '../../services/voice/relaySession';
import { MAX_FRAME_BYTES } from '../../domain/voice/frames';
import { verifyRelayReference } from '../../services/voice/reference';
import { claimCallRelay } from '../../db/repositories/voiceCalls';
import { getPlacedCall } from '../../db/repositories/calls';
import { resolveTalkToken, talkTokenStillSigned } from '../agents/talkToken';
import { isWidgetVoiceToken, liveWidgetVoiceToken, widgetVoiceTokenStillHolds } from '../widgetVoice';
import { BASE_PATH } from '../app';
import { voiceRelaySockets } from '../../metrics';
import { propagation, ROOT_CONTEXT, type Context } from '@opentelemetry/api';

/** How often a talk-token socket re-checks its token's signature, ms (docs/security.md "Revocation"). */
export const TALK_TOKEN_RECHECK_MS = 1000;

/** Path of the relay endpoint. */
export const RELAY_PATH = `${BASE_PATH}/voice/relay`;

/** The attached endpoint. */
export interface VoiceRelay {
  /** Open sessions. */
  readonly sessions: ReadonlySet<RelaySession>;
  /** Closes every socket (1001 going away) and stops accepting upgrades. */
  close(): Promise<void>;
}

/**
 * The grant a relay URL's credential carries, or undefined when it is missing, forged or expired.
 * A voice talk token of a published agent pins the token's version; a draft-mode token compiles the draft.
 */
export async function relayGrant(deps: Pick<ConversationDeps, 'db'>, url: URL, origin?: string): Promise<RelayGrant | undefined> {
  const ref = url.searchParams.get('ref');
  if (ref) {
    const c = await verifyRelayReference(deps.db, ref);
    if (!c) return undefined;
    // Single-use: the first upgrade for the call claims its relay; a replayed reference (or a second socket) is refused.
    const claimed = await claimCallRelay(deps.db, c.org, c.call);
    if (!claimed) return undefined;
    const grant: RelayGrant = {
      orgId: c.org, agentId: c.agt, versionId: c.ver ?? null, callId: c.call, speakGreeting: c.grt === 1, keyId: null, campaignId: c.cmp ?? null,
      provider: claimed.provider, ...(c.tp ? { traceparent: c.tp } : {}),
    };
    if (c.plc !== 1) return grant;
    // A call placed by POST /calls: the conversation gets the variables and metadata it was placed with.
    const placed = await getPlacedCall(deps.db, c.org, c.call);
    return placed ? { ...grant, variables: placed.variables, metadata: placed.metadata } : undefined;
  }
  const token = url.searchParams.get('token');
  // A widget voice token (api/widgetVoice.ts) holds only from its page origin: the handshake's `Origin`, which
  // browsers always send on a WebSocket handshake (RFC 6455 §4.1). The call is a conversation of the widget's
  // publishable key, labelled with the page and the widget's chat session.
  if (token && isWidgetVoiceToken(token)) {
    const w = await liveWidgetVoiceToken(deps.db, token, origin);
    if (!w) return undefined;
    return { orgId: w.org, agentId: w.agt, versionId: w.ver, callId: null, speakGreeting: true, keyId: w.kid, campaignId: null, provider: 'widget', metadata: { origin: w.ori, widgetSessionId: w.cnv } };
  }
  if (token) {
    const c = await resolveTalkToken(deps.db, token);
    if (!c || c.ch !== 'voice') return undefined;
    return { orgId: c.org, agentId: c.agt, versionId: c.ver, callId: null, speakGreeting: true, keyId: c.jti, campaignId: null, provider: 'talk_page' };
  }
  return undefined;
}

/**
 * The trace context a relay socket's `voice.call` span continues (W3C Trace Context,
 * https://www.w3.org/TR/trace-context/): the upgrade request's `traceparent` (and `tracestate`) header, else its
 * `traceparent` query parameter (a browser's WebSocket sends no headers: the talk page passes the one its info
 * request was answered with), else the carrier webhook's that the relay reference carries. ROOT_CONTEXT (a new
 * trace) when none is given, or a malformed one, or tracing is off.
 */
export function relayTraceContext(req: http.IncomingMessage, url: URL, grant: RelayGrant): Context {
  const header = req.headers.traceparent;
  if (typeof header === 'string') return propagation.extract(ROOT_CONTEXT, { traceparent: header, ...(typeof req.headers.tracestate === 'string' ? { tracestate: req.headers.tracestate } : {}) });
  const traceparent = url.searchParams.get('traceparent') ?? grant.traceparent;
  return traceparent ? propagation.extract(ROOT_CONTEXT, { traceparent }) : ROOT_CONTEXT;
}

function refuse(socket: Duplex, status: number, text: string): void {
  socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
}

/**
 * Serves the relay on `server`'s upgrade requests.
 * @param hooks the call lifecycle's listeners (the voice-call workflow's signals)
 */
export function attachVoiceRelay(server: http.Server, deps: ConversationDeps, logger: Logger, hooks: RelayHooks = {}): VoiceRelay {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES, perMessageDeflate: false });
  const sessions = new Set<RelaySession>();
  const onUpgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const url = new URL(req.url ?? '/', 'http://relay');
    if (url.pathname !== RELAY_PATH) return refuse(socket, 404, 'Not Found');
    relayGrant(deps, url, typeof req.headers.origin === 'string' ? req.headers.origin : undefined).then(
      (grant) => {
        if (!grant) return refuse(socket, 401, 'Unauthorized');
        const parent = relayTraceContext(req, url, grant);
        wss.handleUpgrade(req, socket, head, (ws) => open(ws, grant, socket, url.searchParams.get('ref') ? null : url.searchParams.get('token'), parent));
      },
      (err) => {
        logger.error({ err }, 'relay: checking the credential failed');
        refuse(socket, 503, 'Service Unavailable');
      },
    );
  };
  /** `socket`: the upgraded connection, which `ws` writes its frames to (handleUpgrade takes it over). */
  const open = (ws: WebSocket, grant: RelayGrant, socket: Duplex, token: string | null, parent: Context) => {
    // Frames sent in one run of the event loop (an answer's `text` tokens when the model streams faster than
    // the loop turns) leave in one write: the socket is corked until the queued callbacks ran.
    let corked = false;
    const session = new RelaySession(
      deps,
      grant,
      {
        send: (frame) => {
          if (ws.readyState !== ws.OPEN) return;
          if (!corked) {
            corked = true;
            socket.cork();
            process.nextTick(() => {
              corked = false;
              socket.uncork();
            });
          }
          ws.send(JSON.stringify(frame));
        },
        close: (code, reason) => ws.close(code, reason),
      },
      logger,
      hooks,
      parent,
    );
    sessions.add(session);
    voiceRelaySockets.inc();
    // A talk-token session lasts only while its token's signature holds: rotating the organization's
    // talk-token secret closes it (docs/security.md "Revocation"). Carrier calls (relay references) are
    // authenticated by the carrier's signed webhook and keep their socket.
    const recheck = token
      ? setInterval(() => {
          (isWidgetVoiceToken(token) ? widgetVoiceTokenStillHolds(deps.db, token) : talkTokenStillSigned(deps.db, token)).then(
            (ok) => {
              if (!ok && ws.readyState === ws.OPEN) ws.close(CLOSE.policy, 'credential revoked');
            },
            (err) => logger.warn({ err }, 'relay: re-checking the talk token failed'),
          );
        }, TALK_TOKEN_RECHECK_MS)
      : null;
    recheck?.unref();
    ws.on('message', (data, isBinary) => {
      if (isBinary) return session.receive('binary');
      session.receive(data.toString());
    });
    ws.on('error', (err) => logger.warn({ err }, 'relay: socket error'));
    ws.on('close', () => {
      voiceRelaySockets.dec();
      if (recheck) clearInterval(recheck);
      session.socketClosed();
      void session.idle().finally(() => sessions.delete(session));
    });
  };
  server.on('upgrade', onUpgrade);
  return {
    sessions,
    close: async () => {
      server.off('upgrade', onUpgrade);
      for (const ws of wss.clients) ws.close(1001, 'server shutting down');
      await Promise.all([...sessions].map((s) => s.idle()));
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

export { CLOSE };
