/**
 * The history window of a chat turn (docs/api-notes.md "Conversations": a turn reads the last HISTORY_MESSAGES
 * messages), kept per process for the `chat` and `web` conversations it answered: the next turn's read then asks
 * Postgres only for the messages numbered from the held window's end (none when this process stored the last turn;
 * those another process stored otherwise), so each turn reads the conversation's row and what is new. Messages of
 * these channels are never rewritten once stored (a call's interrupted line is: voice is not held), and their
 * numbers are the conversation's message count so far, so the merged window is the one a full read returns.
 */
import type { Db } from '../../db';
import { getConversationWithHistory, type ConversationRecord } from '../../db/repositories/conversations';
import type { ConversationMessage } from '../../schemas/types/chat';

/** Conversations whose window is held at most (least recently used dropped). */
const MAX_WINDOWS = 2000;
const HELD_CHANNELS: ReadonlySet<string> = new Set(['chat', 'web']);

const windows = new Map<string, { orgId: string; upTo: number; recent: readonly ConversationMessage[] }>();

/**
 * The conversation with its last `limit` messages, oldest first (db/repositories/conversations.ts
 * `getConversationWithHistory`), reading only the messages past the window held for it.
 */
export async function conversationWithHistory(db: Db, orgId: string, id: string, limit: number): Promise<(ConversationRecord & { recent: ConversationMessage[] }) | undefined> {
  const held = windows.get(id);
  const from = held && held.orgId === orgId ? held.upTo : 0;
  const c = await getConversationWithHistory(db, orgId, id, limit, from);
  if (!c || !held || from === 0) return c;
  // Counts only grow; a smaller one means the held window is not this conversation's: read it whole.
  if (c.messageCount < from) return getConversationWithHistory(db, orgId, id, limit);
  return { ...c, recent: [...held.recent, ...c.recent].slice(-limit) };
}

/** Holds the window a stored turn ends with: `recent` are the conversation's last messages up to `c.messageCount`. */
export function holdWindow(c: ConversationRecord, recent: readonly ConversationMessage[]): void {
  if (!HELD_CHANNELS.has(c.channel) || c.status !== 'active') return;
  if (windows.size >= MAX_WINDOWS) windows.delete(windows.keys().next().value as string);
  windows.set(c.id, { orgId: c.orgId, upTo: c.messageCount, recent });
}
