/**
 * Responses of the OpenAI-compatible Responses API (docs/api-notes.md "Responses API"; migration
 * 20261126004000_responses): a `resp_…` names one turn of a conversation, so `previous_response_id` finds the
 * conversation to continue. Every function takes the organization id: another organization's response is
 * invisible, exactly like a missing one.
 */
import type { Conn } from './agents';
import { rowMapper } from '../rows';

/** A client function call a response left waiting for the client's `function_call_output`. */
export interface PendingCall {
  callId: string;
  name: string;
}

/** A stored response. */
export interface ResponseRecord {
  id: string;
  orgId: string;
  conversationId: string;
  previousResponseId: string | null;
  /** The conversation's turn count after this response: only the latest response of a conversation continues. */
  turn: number;
  pendingCalls: PendingCall[];
  /** The response object as answered. */
  body: Record<string, unknown>;
}

const toRecord = rowMapper<ResponseRecord>({
  id: 'value',
  orgId: 'value',
  conversationId: 'value',
  previousResponseId: 'nullable',
  turn: 'value',
  pendingCalls: 'list',
  body: 'value',
});

/** Stores a response. */
export async function insertResponse(conn: Conn, orgId: string, r: Omit<ResponseRecord, 'orgId'>): Promise<void> {
  await conn('responses').insert({
    id: r.id,
    org_id: orgId,
    conversation_id: r.conversationId,
    previous_response_id: r.previousResponseId,
    turn: r.turn,
    pending_calls: JSON.stringify(r.pendingCalls),
    body: JSON.stringify(r.body),
  });
}

/** The organization's response `id`, or undefined (also another organization's). */
export async function getResponse(conn: Conn, orgId: string, id: string): Promise<ResponseRecord | undefined> {
  const row = await conn('responses').where({ org_id: orgId, id }).first();
  return row ? toRecord(row) : undefined;
}
