/**
 * The history window a chat turn reads (services/conversations/history.ts): with the window held by this process,
 * the read asks only for newer messages, and the merged window is exactly what a full read returns — after this
 * process's own turns, after turns another process stored (written here straight through the repository, as another
 * API process would), and for a conversation longer than the window. Real Postgres.
 */
import { expect } from 'chai';
import { tapStatements } from '../../helpers/pgTap';
import { createOrganization } from '../../../db/repositories/organizations';
import { createConversation, getConversationWithHistory, saveTurns, type ConversationRecord, type StoredTurn } from '../../../db/repositories/conversations';
import { conversationWithHistory, holdWindow } from '../../../services/conversations/history';
import { useMigratedDb } from '../../helpers/postgres';

describe('chat history window held in process', () => {
  const db = useMigratedDb('history_window');
  const LIMIT = 30;

  const turn = (text: string): StoredTurn => ({
    messages: [
      { role: 'user', content: text },
      { role: 'assistant', content: `You said: ${text}` },
    ],
    receipt: { turn: 1, toolCalls: [], knowledge: [], guardrails: [], latency: [] } as never,
    promptTokens: 1,
    completionTokens: 1,
    model: 'sandbox',
    variables: {},
    playbook: null,
    end: null,
    stats: { toolCalls: 0, toolCallsOk: 0, guardrailTriggers: 0, knowledgeLookups: 0, knowledgeHits: 0, costCents: 0 },
  });

  /** Stores a turn as this process does after a turn (and holds the window it ends with), or as another process does (holding nothing). */
  async function store(c: ConversationRecord & { recent: any[] }, text: string, here: boolean): Promise<void> {
    const [saved] = await saveTurns(db(), c.orgId, [{ c, turn: turn(text) }]);
    if (saved === 'conflict') throw new Error('conflict');
    if (here) holdWindow(saved.conversation, [...c.recent, ...saved.messages].slice(-LIMIT));
  }

  /** Messages the reads' statements returned (counted at pg's `Client`, where every pool's statements pass). */
  async function rowsRead<T>(fn: () => Promise<T>): Promise<{ value: T; messages: number }> {
    let messages = 0;
    const untap = tapStatements(() => (res) => res.rows.forEach((r) => (messages += (r.recent ?? []).length)));
    try {
      const value = await fn();
      return { value, messages };
    } finally {
      untap();
    }
  }

  it('returns exactly the full read after its own turns, another process\'s turns and past the window, reading only what is new', async () => {
    const org = await createOrganization(db(), 'History window');
    const { conversation } = await createConversation(db(), org.id, {
      agentId: 'agt_window0001', channel: 'chat', mode: 'published', versionId: 'ver_window0001', draftVersion: null, draftSnapshot: null,
      variables: {}, metadata: {}, keyId: null, greeting: 'Hello',
    });
    const id = conversation.id;
    const counts: number[] = [];
    for (let i = 0; i < 24; i++) {
      const { value: c, messages } = await rowsRead(() => conversationWithHistory(db(), org.id, id, LIMIT));
      expect(c, `turn ${i}`).to.deep.equal(await getConversationWithHistory(db(), org.id, id, LIMIT));
      counts.push(messages);
      await store(c!, `message ${i}`, true);
      // After every third turn another process answers one: this process's next read fetches its two messages only.
      if (i % 3 === 2) await store((await getConversationWithHistory(db(), org.id, id, LIMIT))!, `elsewhere ${i}`, false);
    }
    expect(counts).to.deep.equal([1, ...Array.from({ length: 23 }, (_, k) => ((k + 1) % 3 === 0 ? 2 : 0))]);
    const last = await getConversationWithHistory(db(), org.id, id, LIMIT);
    expect(last!.messageCount).to.equal(1 + 2 * (24 + 8));
    expect(last!.recent).to.have.length(LIMIT);
  });

  it('reads the window whole for a conversation it holds nothing of, from its index range', async () => {
    const org = await createOrganization(db(), 'History window 2');
    const { conversation } = await createConversation(db(), org.id, {
      agentId: 'agt_window0002', channel: 'web', mode: 'published', versionId: 'ver_window0002', draftVersion: null, draftSnapshot: null,
      variables: {}, metadata: {}, keyId: null, greeting: 'Hello',
    });
    let c = (await getConversationWithHistory(db(), org.id, conversation.id, LIMIT))!;
    for (let i = 0; i < 20; i++) {
      await store(c, `m${i}`, false);
      c = (await getConversationWithHistory(db(), org.id, conversation.id, LIMIT))!;
    }
    const { value, messages } = await rowsRead(() => conversationWithHistory(db(), org.id, conversation.id, LIMIT));
    expect(messages).to.equal(LIMIT);
    expect(value!.recent.map((m) => m.content)).to.deep.equal(c.recent.map((m) => m.content));
    expect(value!.recent[LIMIT - 1].content).to.equal('You said: m19');
  });
  it('answers an organization\'s concurrent turn reads with one statement, each its own conversation, none of another organization', async () => {
    const org = await createOrganization(db(), 'History batch');
    const other = await createOrganization(db(), 'History batch, other');
    const open = async (orgId: string, n: number) => {
      const { conversation } = await createConversation(db(), orgId, {
        agentId: 'agt_batch0001', channel: 'chat', mode: 'published', versionId: 'ver_batch0001', draftVersion: null, draftSnapshot: null,
        variables: {}, metadata: {}, keyId: null, greeting: `Hello ${n}`,
      });
      let c = (await getConversationWithHistory(db(), orgId, conversation.id, LIMIT))!;
      for (let i = 0; i < n; i++) {
        await store(c, `c${n} m${i}`, false);
        c = (await getConversationWithHistory(db(), orgId, conversation.id, LIMIT))!;
      }
      return c;
    };
    const mine = [await open(org.id, 1), await open(org.id, 3), await open(org.id, 20)];
    const theirs = await open(other.id, 2);
    const ids = [...mine.map((c) => c.id), theirs.id, 'cnv_unknown000001'];
    const statements: string[] = [];
    const untap = tapStatements((s) => void statements.push(s.text));
    let read: Awaited<ReturnType<typeof getConversationWithHistory>>[];
    try {
      read = await Promise.all(ids.map((id) => getConversationWithHistory(db(), org.id, id, LIMIT)));
    } finally {
      untap();
    }
    expect(statements.filter((t) => t.includes('/* turn read */'))).to.have.length(1);
    expect(read.slice(0, 3)).to.deep.equal(mine);
    expect(read[2]!.recent).to.have.length(LIMIT);
    expect(read[3], 'another organization\'s conversation').to.equal(undefined);
    expect(read[4], 'an unknown id').to.equal(undefined);
  });
});
