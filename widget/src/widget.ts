/**
 * The embeddable chat widget (docs/api-notes.md "Widget"): one tag,
 * `<script src="https://<api host>/widget.js" data-publishable-key="<brand>_pk_live_…" async></script>`.
 * It first asks `GET /widget/status` whether the page's origin may use the key — on a refused origin it shows
 * nothing and tells the site owner with a `console.warn` — then renders a launcher and a chat panel inside a
 * shadow root (styles isolated from the page), starts a widget session with the publishable key
 * (`POST /api/v1/chat/widget/sessions`; the browser sends the page's Origin, which the key must allow), and
 * streams each answer as Server-Sent Events from `POST /api/v1/chat/sessions/{id}/messages` with the session
 * token. The session is kept per tab (sessionStorage) and its history re-read with
 * `GET /api/v1/chat/sessions/{id}` on load, so the conversation survives reloads and navigation within the site.
 * Where the agent takes voice calls a voice button opens the ConversationRelay endpoint with a widget voice
 * token (`POST /api/v1/chat/widget/sessions/{id}/voice-token`) and speaks the carrier's side of the protocol
 * as the talk page does (api/voice/talkPage.ts): `setup`, a final `prompt` per recognized (Web Speech API
 * SpeechRecognition) or typed utterance; the agent's `text` tokens are shown and spoken (speechSynthesis).
 * Keyboard and screen reader: every control is a labelled button, the input has a label, the message log is
 * an ARIA live region, Escape closes the panel and focus returns to the launcher.
 */
import { personFollower } from './person';
import { speechErrorText } from './speech';
import { readEvents } from './sse';

interface WidgetSettings {
  title: string;
  primaryColor: string;
  textColor: string;
  position: 'bottom-right' | 'bottom-left';
  launcherText: string;
}

interface SessionStart {
  session: { id: string };
  greeting: { content: string; createdAt?: string } | null;
  sessionToken: string;
  expiresAt: string;
  widget: WidgetSettings;
  voice?: boolean;
}

/** What the tab keeps (sessionStorage) to continue its conversation after a reload or a navigation. */
interface Stored {
  id: string;
  token: string;
  expiresAt: string;
  widget: WidgetSettings;
  voice: boolean;
  open: boolean;
}

interface Message {
  role: 'user' | 'assistant' | 'tool';
  content: string | null;
  createdAt: string;
}

interface Problem {
  code?: string;
  detail?: string;
  title?: string;
}

/** A ConversationRelay frame the relay sends (docs/voice.md). */
interface RelayFrame {
  type: string;
  token?: string;
  last?: boolean;
}

/** What the widget says when it cannot start (by problem code). */
const REFUSALS: Record<string, string> = {
  no_published_version: 'This assistant is not available yet.',
  widget_disabled: 'Chat is turned off for this assistant.',
};

/** Call phases and what the call bar says for each. */
const PHASES = { connecting: 'Connecting…', listening: 'Listening', speaking: 'Agent speaking', ended: 'Call ended' } as const;
type Phase = keyof typeof PHASES;

const script = document.currentScript as HTMLScriptElement | null;

function apiOrigin(): string {
  return new URL(script?.src ?? '', location.href).origin;
}
function apiBase(): string {
  return `${apiOrigin()}/api/v1`;
}

const STYLE = `
:host { all: initial; --acp-brand: #1f4fd1; --acp-text: #ffffff; }
* { box-sizing: border-box; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
.launcher { position: fixed; bottom: 20px; padding: 12px 18px; border: 0; border-radius: 24px; cursor: pointer; font-size: 15px; box-shadow: 0 4px 14px rgba(0,0,0,.2); z-index: 2147483000; }
button:focus-visible, input:focus-visible, a:focus-visible, .log:focus-visible { outline: 3px solid var(--acp-brand); outline-offset: 2px; }
header button:focus-visible { outline-color: var(--acp-text); outline-offset: -3px; }
.panel { position: fixed; bottom: 80px; width: 360px; max-width: calc(100vw - 40px); height: 500px; max-height: calc(100vh - 120px); display: flex; flex-direction: column; background: #fff; color: #111; border-radius: 12px; box-shadow: 0 8px 30px rgba(0,0,0,.25); overflow: hidden; z-index: 2147483000; }
.panel[hidden], [hidden] { display: none !important; }
header { display: flex; align-items: center; gap: 6px; padding: 10px 12px; font-weight: 600; }
header .title { flex: 1; }
header button { background: transparent; border: 0; font-size: 20px; line-height: 1; padding: 4px 8px; border-radius: 6px; cursor: pointer; color: inherit; }
header .voice { font-size: 14px; font-weight: 600; border: 1px solid currentColor; }
.call { display: flex; align-items: center; gap: 8px; padding: 8px 12px; background: #eef2ff; color: #1e293b; font-size: 14px; border-bottom: 1px solid #d4d9e6; }
.call .phase { flex: 1; font-weight: 600; }
.call .hangup { padding: 6px 12px; border: 0; border-radius: 8px; background: #b42318; color: #fff; cursor: pointer; font-size: 14px; }
.log { flex: 1; overflow-y: auto; padding: 12px; display: flex; flex-direction: column; gap: 8px; }
.msg { max-width: 85%; padding: 8px 12px; border-radius: 10px; line-height: 1.4; white-space: pre-wrap; word-wrap: break-word; font-size: 14px; }
.msg a { color: inherit; text-decoration: underline; }
.msg time { display: block; margin-top: 2px; font-size: 11px; }
.agent { align-self: flex-start; background: #f1f3f5; color: #111; }
.agent time { color: #4b5563; }
.user { align-self: flex-end; }
.notice { align-self: center; color: #8a1c1c; font-size: 13px; text-align: center; }
.info { align-self: center; color: #374151; font-size: 12px; }
.typing { align-self: flex-start; display: flex; gap: 4px; padding: 10px 12px; border-radius: 10px; background: #f1f3f5; }
.typing .dot { width: 7px; height: 7px; border-radius: 50%; background: #4b5563; animation: acp-blink 1.2s infinite ease-in-out; }
.typing .dot:nth-child(3) { animation-delay: .2s; }
.typing .dot:nth-child(4) { animation-delay: .4s; }
@keyframes acp-blink { 0%, 80%, 100% { opacity: .3; } 40% { opacity: 1; } }
@media (prefers-reduced-motion: reduce) { .typing .dot { animation: none; } }
form { display: flex; gap: 6px; padding: 10px; border-top: 1px solid #e5e7eb; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
input { flex: 1; padding: 9px 10px; border: 1px solid #6b7280; border-radius: 8px; font-size: 14px; color: #111; background: #fff; }
input::placeholder { color: #6b7280; }
form button { padding: 9px 14px; border: 0; border-radius: 8px; cursor: pointer; font-size: 14px; }
form button:disabled { cursor: not-allowed; opacity: .6; }
`;

const URL_PATTERN = /\bhttps?:\/\/[^\s<>"']+/gi;

/**
 * The text as DOM nodes with its http(s) URLs as links (never HTML: text nodes and `<a>` elements built one by
 * one, so nothing in a message can inject markup). Trailing punctuation stays text; anything that does not parse
 * as an http or https URL stays text. Links open a new tab without access to this page (`rel="noopener noreferrer"`).
 */
function linkify(text: string): DocumentFragment {
  const out = document.createDocumentFragment();
  let at = 0;
  for (const m of text.matchAll(URL_PATTERN)) {
    const raw = m[0].replace(/[.,;:!?)\]}]+$/, '');
    let url: URL | null = null;
    try {
      url = new URL(raw);
    } catch {
      url = null;
    }
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) continue;
    out.append(text.slice(at, m.index!));
    const a = document.createElement('a');
    a.href = url.href;
    a.target = '_blank';
    a.rel = 'noopener noreferrer';
    a.textContent = raw;
    out.append(a);
    at = m.index! + raw.length;
  }
  out.append(text.slice(at));
  return out;
}

function readStored(name: string): Stored | null {
  try {
    const s = JSON.parse(sessionStorage.getItem(name) ?? 'null') as Stored | null;
    return s && typeof s.id === 'string' && typeof s.token === 'string' && Date.parse(s.expiresAt) > Date.now() ? s : null;
  } catch {
    return null;
  }
}
/**
 * A random id of this browser's visitor, kept in the site's localStorage: the stickiness key of the agent's
 * traffic split, so a returning visitor stays on one version (docs/api-notes.md "Traffic splits"). Null when
 * storage is refused: the API then picks a version per session.
 */
function visitorId(): string | null {
  try {
    const name = 'acp-widget-visitor';
    let id = localStorage.getItem(name);
    if (!id || !/^[0-9a-f-]{36}$/.test(id)) {
      const b = crypto.getRandomValues(new Uint8Array(16));
      b[6] = (b[6] & 0x0f) | 0x40;
      b[8] = (b[8] & 0x3f) | 0x80;
      const h = Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
      id = `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
      localStorage.setItem(name, id);
    }
    return id;
  } catch {
    return null;
  }
}
/** The session request's body: the visitor id when there is one. */
function visitorOf(): { visitorId?: string } {
  const id = visitorId();
  return id ? { visitorId: id } : {};
}
function writeStored(name: string, s: Stored | null): void {
  try {
    if (s) sessionStorage.setItem(name, JSON.stringify(s));
    else sessionStorage.removeItem(name);
  } catch {
    // Storage refused (a sandboxed frame, storage turned off): the conversation lasts for this page only.
  }
}

function mount(key: string): void {
  const storeName = `acp-widget:${key}`;
  const host = document.createElement('div');
  host.setAttribute('data-acp-widget', '');
  document.body.appendChild(host);
  const root = host.attachShadow({ mode: 'open' });
  root.innerHTML = `<style>${STYLE}</style>
    <button class="launcher" type="button" aria-expanded="false" aria-controls="acp-panel">Chat</button>
    <section class="panel" id="acp-panel" role="dialog" aria-label="Chat" hidden>
      <header><span class="title">Chat</span><button type="button" class="voice" aria-label="Start a voice call" hidden>Call</button><button type="button" class="close" aria-label="Close chat">×</button></header>
      <div class="call" hidden><span class="phase" role="status" data-phase="ended">Call ended</span><button type="button" class="hangup">Hang up</button></div>
      <div class="log" role="log" aria-live="polite" aria-relevant="additions text" aria-label="Conversation" tabindex="0"></div>
      <form><label class="sr" for="acp-input">Your message</label><input id="acp-input" autocomplete="off" maxlength="10000" placeholder="Type your message…" /><button type="submit">Send</button></form>
    </section>`;
  const $ = <T extends Element>(sel: string) => root.querySelector<T>(sel)!;
  const launcher = $<HTMLButtonElement>('.launcher');
  const panel = $<HTMLElement>('.panel');
  const log = $<HTMLElement>('.log');
  const form = $<HTMLFormElement>('form');
  const input = $<HTMLInputElement>('input');
  const send = $<HTMLButtonElement>('form button');
  const header = $<HTMLElement>('header');
  const voiceButton = $<HTMLButtonElement>('.voice');
  const callBar = $<HTMLElement>('.call');
  const phaseEl = $<HTMLElement>('.phase');
  const hangup = $<HTMLButtonElement>('.hangup');
  let session: Stored | null = null;
  let starting: Promise<void> | null = null;
  let busy = false;

  const scroll = () => {
    log.scrollTop = log.scrollHeight;
  };
  /** A message bubble: text with its links, and a timestamp. */
  const add = (cls: 'agent' | 'user', text: string, at: Date = new Date()) => {
    const el = document.createElement('div');
    el.className = `msg ${cls}`;
    const who = document.createElement('span');
    who.className = 'sr';
    who.textContent = cls === 'user' ? 'You: ' : 'Assistant: ';
    const body = document.createElement('span');
    body.className = 'body';
    body.append(linkify(text));
    const time = document.createElement('time');
    time.dateTime = at.toISOString();
    time.textContent = at.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
    el.append(who, body, time);
    if (cls === 'user' && session) {
      el.style.background = session.widget.primaryColor;
      el.style.color = session.widget.textColor;
    }
    log.appendChild(el);
    scroll();
    return { el, body };
  };
  const note = (cls: 'notice' | 'info', text: string) => {
    const el = document.createElement('div');
    el.className = `msg ${cls}`;
    el.textContent = text;
    log.appendChild(el);
    scroll();
  };
  const refuse = (p: Problem) => {
    note('notice', REFUSALS[p.code ?? ''] ?? p.detail ?? 'The chat is unavailable right now.');
    input.disabled = true;
    send.disabled = true;
  };
  const style = (w: WidgetSettings) => {
    for (const el of [launcher, header, send]) {
      el.style.background = w.primaryColor;
      el.style.color = w.textColor;
    }
    host.style.setProperty('--acp-brand', w.primaryColor);
    host.style.setProperty('--acp-text', w.textColor);
    const side = w.position === 'bottom-left' ? 'left' : 'right';
    launcher.style[side] = '20px';
    panel.style[side] = '20px';
    launcher.textContent = w.launcherText;
    $('.title').textContent = w.title;
    panel.setAttribute('aria-label', w.title);
  };
  const adopt = (s: Stored) => {
    session = s;
    style(s.widget);
    voiceButton.hidden = !s.voice;
    writeStored(storeName, s);
  };
  const forget = () => {
    session = null;
    starting = null;
    voiceButton.hidden = true;
    writeStored(storeName, null);
  };
  style({ title: 'Chat', primaryColor: '#1f4fd1', textColor: '#ffffff', position: 'bottom-right', launcherText: 'Chat' });

  /** Re-reads the kept session's messages; forgets the session when it no longer holds or has ended. */
  const restore = async (s: Stored) => {
    const res = await fetch(`${apiBase()}/chat/sessions/${encodeURIComponent(s.id)}`, { headers: { authorization: `Bearer ${s.token}` }, cache: 'no-store' }).catch(() => null);
    const body = res?.ok ? ((await res.json().catch(() => null)) as { data?: { session: { status: string }; messages: Message[] } } | null) : null;
    if (!body?.data || body.data.session.status !== 'active') return forget();
    adopt(s);
    for (const m of body.data.messages) {
      if ((m.role === 'user' || m.role === 'assistant') && m.content) add(m.role === 'user' ? 'user' : 'agent', m.content, new Date(m.createdAt));
    }
  };

  const start = () =>
    (starting ??= (async () => {
      if (session) return;
      const res = await fetch(`${apiBase()}/chat/widget/sessions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify(visitorOf()) }).catch(() => null);
      if (!res) return refuse({});
      const body = await res.json().catch(() => ({}));
      if (!res.ok) return refuse(body as Problem);
      const d = (body as { data: SessionStart }).data;
      adopt({ id: d.session.id, token: d.sessionToken, expiresAt: d.expiresAt, widget: d.widget, voice: d.voice === true, open: !panel.hidden });
      if (d.greeting) add('agent', d.greeting.content, d.greeting.createdAt ? new Date(d.greeting.createdAt) : undefined);
    })());

  const open = (value: boolean, focus = true) => {
    panel.hidden = !value;
    launcher.setAttribute('aria-expanded', String(value));
    if (session) writeStored(storeName, { ...session, open: value });
    if (value) {
      void start();
      if (focus) input.focus();
    } else if (focus) launcher.focus();
  };
  launcher.addEventListener('click', () => open(panel.hidden));
  $('.close').addEventListener('click', () => open(false));
  panel.addEventListener('keydown', (e) => {
    if ((e as KeyboardEvent).key === 'Escape') open(false);
  });

  /** Sending is off while an answer streams (the text typed meanwhile stays in the input). */
  const setBusy = (value: boolean) => {
    busy = value;
    send.disabled = value;
  };
  const typing = () => {
    const el = document.createElement('div');
    el.className = 'typing';
    el.innerHTML = '<span class="sr">The assistant is typing</span><span class="dot"></span><span class="dot"></span><span class="dot"></span>';
    log.appendChild(el);
    scroll();
    return el;
  };

  // A person of the team holding the conversation: their lines (./person.ts).
  const person = personFollower({
    read: async () => {
      if (!session) return null;
      const res = await fetch(`${apiBase()}/chat/sessions/${encodeURIComponent(session.id)}`, { headers: { authorization: `Bearer ${session.token}` }, cache: 'no-store' }).catch(() => null);
      const body = res?.ok ? ((await res.json().catch(() => null)) as { data?: { session: { status: string }; messages: { id: string; role: string; content: string | null; name?: string; createdAt: string }[] } } | null) : null;
      return body?.data ? { status: body.data.session.status, messages: body.data.messages } : null;
    },
    show: (text, at) => {
      add('agent', text, at);
      scroll();
    },
  });

  const chat = async (text: string) => {
    await start();
    if (!session) return;
    setBusy(true);
    input.value = '';
    add('user', text);
    const indicator = typing();
    let reply: { el: HTMLElement; body: HTMLElement } | null = null;
    let raw = '';
    try {
      const res = await fetch(`${apiBase()}/chat/sessions/${session.id}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${session.token}`, 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ content: text }),
      });
      if (!res.ok) {
        const p = (await res.json().catch(() => ({}))) as Problem;
        if (res.status === 401 || p.code === 'conversation_ended') forget();
        note('notice', p.detail ?? 'The message could not be sent.');
      } else {
        await readEvents(res, (type, data) => {
          if (type === 'message.delta' && typeof data?.content === 'string') {
            if (!reply) {
              reply = add('agent', '');
              // Screen readers hear the answer once it is whole, not token by token (WAI-ARIA 1.2 aria-busy).
              reply.el.setAttribute('aria-busy', 'true');
            }
            raw += data.content;
            reply.body.textContent = raw;
            log.insertBefore(reply.el, indicator);
          } else if (type === 'message.completed' && data?.reply?.content) {
            raw = data.reply.content;
            reply ??= add('agent', '');
            person.stop();
          } else if (type === 'message.completed' && data && data.reply === null && Array.isArray(data.messages) && data.messages[0]?.createdAt) {
            // No answer: a person of the team holds the conversation (docs/api-notes.md "Live control"); their lines are fetched.
            person.follow(String(data.messages[0].createdAt));
          } else if (type === 'error') note('notice', data?.detail ?? 'The answer failed.');
          scroll();
        });
      }
    } catch {
      note('notice', 'The connection was lost.');
    } finally {
      indicator.remove();
      // Links become clickable once the answer is whole (a streaming URL is not yet one).
      const done = reply as { el: HTMLElement; body: HTMLElement } | null;
      if (done) {
        done.body.replaceChildren(linkify(raw));
        done.el.removeAttribute('aria-busy');
      }
      setBusy(false);
    }
  };

  // ---- Voice call (ConversationRelay, as the talk page speaks it) ----
  type Recognizer = { lang: string; continuous: boolean; interimResults: boolean; start(): void; stop(): void; abort(): void; onresult: ((e: any) => void) | null; onerror: ((e: any) => void) | null; onend: (() => void) | null };
  const SR = ((window as any).SpeechRecognition || (window as any).webkitSpeechRecognition) as (new () => Recognizer) | undefined;
  let ws: WebSocket | null = null;
  let recognizer: Recognizer | null = null;
  /** Recognition failed for this call (no microphone, refused, no service): the visitor types instead. */
  let speechFailed = false;
  let speaking = 0;
  let current: { el: HTMLElement; body: HTMLElement } | null = null;
  let currentText = '';
  const setPhase = (p: Phase) => {
    phaseEl.dataset.phase = p;
    phaseEl.textContent = p === 'listening' && speechFailed ? 'Type to talk' : PHASES[p];
    if (p === 'listening') listen();
    else if (recognizer) recognizer.abort();
  };
  const inCall = () => !!ws && ws.readyState === WebSocket.OPEN;
  /** Listens for the visitor's next utterance (when the browser has SpeechRecognition and the agent is not speaking). */
  const listen = () => {
    if (!SR || recognizer || speechFailed || !inCall()) return;
    const r = (recognizer = new SR());
    r.lang = document.documentElement.lang || 'en-US';
    r.continuous = false;
    r.interimResults = false;
    r.onresult = (e) => {
      const said = e.results?.[0]?.[0]?.transcript;
      if (typeof said === 'string' && said.trim()) say(said.trim());
    };
    r.onerror = (e) => {
      // Silence and our own abort are part of listening; any other error stops recognition for the call, said once.
      if (e.error === 'no-speech' || e.error === 'aborted') return;
      speechFailed = true;
      phaseEl.textContent = 'Type to talk';
      note('notice', speechErrorText(String(e.error)));
    };
    r.onend = () => {
      recognizer = null;
      // Recognition stops after each utterance or a silence: listen again while the call waits for the visitor.
      if (inCall() && !speechFailed && phaseEl.dataset.phase === 'listening') setTimeout(listen, 250);
    };
    try {
      r.start();
    } catch {
      recognizer = null;
    }
  };
  const speak = (text: string) => {
    const synth = window.speechSynthesis;
    if (!synth || !text) return setPhase('listening');
    const u = new SpeechSynthesisUtterance(text);
    const mine = ++speaking;
    // Some browsers never end an utterance they cannot voice: listen again after a generous estimate anyway.
    const fallback = setTimeout(() => done(), 1500 + text.split(/\s+/).length * 450);
    const done = () => {
      clearTimeout(fallback);
      if (mine === speaking && inCall()) setPhase('listening');
    };
    u.onend = u.onerror = done;
    synth.speak(u);
  };
  const say = (text: string) => {
    if (!inCall()) return;
    input.value = '';
    add('user', text);
    ws!.send(JSON.stringify({ type: 'prompt', voicePrompt: text, lang: 'en-US', last: true }));
  };
  const endCall = (reason: string) => {
    ws = null;
    recognizer?.abort();
    recognizer = null;
    window.speechSynthesis?.cancel();
    setPhase('ended');
    hangup.hidden = true;
    voiceButton.disabled = false;
    input.placeholder = 'Type your message…';
    note('info', reason);
  };
  const call = async () => {
    await start();
    if (!session || ws) return;
    voiceButton.disabled = true;
    callBar.hidden = false;
    hangup.hidden = false;
    speechFailed = false;
    setPhase('connecting');
    const res = await fetch(`${apiBase()}/chat/widget/sessions/${session.id}/voice-token`, { method: 'POST', headers: { authorization: `Bearer ${session.token}` } }).catch(() => null);
    const body = res ? await res.json().catch(() => ({})) : {};
    if (!res?.ok) return endCall((body as Problem).detail ?? 'The voice call could not start.');
    // Ask for the microphone once, up front, so a refusal is said before the agent speaks (SpeechRecognition then reuses the permission).
    if (SR && navigator.mediaDevices?.getUserMedia) {
      await navigator.mediaDevices
        .getUserMedia({ audio: true })
        .then((stream) => stream.getTracks().forEach((t) => t.stop()))
        .catch((err: { name?: string }) => {
          // Said once here; recognition is then not tried for this call (it would fail the same way).
          speechFailed = true;
          note('notice', speechErrorText(err?.name === 'NotFoundError' ? 'audio-capture' : 'not-allowed'));
        });
    }
    let opened = false;
    const socket = (ws = new WebSocket((body as { data: { relayUrl: string } }).data.relayUrl));
    socket.onopen = () => {
      opened = true;
      input.placeholder = SR ? 'Speak, or type to talk…' : 'Type to talk…';
      note('info', 'Voice call started');
      socket.send(JSON.stringify({ type: 'setup', sessionId: `widget-${Date.now()}`, callSid: 'widget', from: '', to: '', direction: 'inbound', customParameters: {} }));
      setPhase('listening');
    };
    socket.onmessage = (e) => {
      let f: RelayFrame;
      try {
        f = JSON.parse(String(e.data)) as RelayFrame;
      } catch {
        return;
      }
      if (f.type === 'text') {
        if (phaseEl.dataset.phase !== 'speaking') setPhase('speaking');
        if (!current) {
          current = add('agent', '');
          current.el.setAttribute('aria-busy', 'true');
        }
        currentText += f.token ?? '';
        current.body.textContent = currentText;
        scroll();
        if (f.last) {
          current.body.replaceChildren(linkify(currentText));
          current.el.removeAttribute('aria-busy');
          speak(currentText);
          current = null;
          currentText = '';
        }
      }
    };
    socket.onclose = () => {
      if (ws === socket) endCall(opened ? 'Voice call ended' : 'The voice call could not connect.');
    };
  };
  voiceButton.addEventListener('click', () => void call());
  hangup.addEventListener('click', () => {
    if (ws) ws.close(1000, 'hung up');
  });

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text || busy) return;
    if (inCall()) return say(text);
    void chat(text);
  });

  // A conversation this tab already has: its history is re-read, and the panel is as it was.
  const kept = readStored(storeName);
  if (kept) {
    void restore(kept).then(() => {
      if (session && kept.open) open(true, false);
    });
  } else if (script?.dataset.open === 'true') open(true);
}

/** Mounts the widget once the API says this page's origin may use the key; warns the site owner otherwise. */
async function boot(key: string): Promise<void> {
  const status = await fetch(`${apiOrigin()}/widget/status?key=${encodeURIComponent(key)}`, { cache: 'no-store' })
    .then((r) => r.json() as Promise<{ originAllowed?: boolean }>)
    .catch(() => null);
  if (!status) return console.warn('agent-control-plane widget: the service could not be reached; the chat is not shown');
  if (!status.originAllowed) {
    return console.warn(`agent-control-plane widget: ${location.origin} is not an allowed origin of this publishable key (or the key is not live); add it to the key's allowedOrigins. The chat is not shown.`);
  }
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', () => mount(key));
  else mount(key);
}

const key = script?.dataset.publishableKey;
if (key) void boot(key);
else console.error('agent-control-plane widget: the script tag needs data-publishable-key');
