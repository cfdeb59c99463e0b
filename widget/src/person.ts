/**
 * While a person of the team holds the widget's conversation (docs/api-notes.md "Live control": the agent left the
 * visitor's message unanswered, `reply: null`), their lines are read from the session every 2 s and shown, each once,
 * until the agent answers again or the conversation ends.
 */

/** One message of `GET /chat/sessions/{id}` as this module reads it (a member's line is named `operator`). */
interface SessionMessage {
  id: string;
  role: string;
  content: string | null;
  name?: string;
  createdAt: string;
}

/** What following needs from the widget. */
export interface PersonDeps {
  /** The session read (`GET /chat/sessions/{id}` with the session token), or null when it cannot be read. */
  read(): Promise<{ status: string; messages: SessionMessage[] } | null>;
  /** Shows a line of the person. */
  show(text: string, at: Date): void;
}

/** Starts and stops following; `follow(since)` shows the person's lines stored at or after `since` (ISO 8601). */
export function personFollower(deps: PersonDeps): { follow(since: string): void; stop(): void } {
  let timer: ReturnType<typeof setInterval> | null = null;
  const shown = new Set<string>();
  const stop = () => {
    if (timer) clearInterval(timer);
    timer = null;
  };
  const poll = async (since: string) => {
    const s = await deps.read();
    if (!s) return;
    for (const m of s.messages) {
      if (m.role !== 'assistant' || !m.content || m.name !== 'operator' || m.createdAt < since || shown.has(m.id)) continue;
      shown.add(m.id);
      deps.show(m.content, new Date(m.createdAt));
    }
    if (s.status !== 'active') stop();
  };
  return {
    follow(since) {
      if (timer) return;
      timer = setInterval(() => void poll(since), 2000);
      void poll(since);
    },
    stop,
  };
}
