/**
 * The embeddable chat widget (docs/api-notes.md "Widget"): one tag,
 * `<script src="https://<api host>/widget.js" data-publishable-key="<brand>_pk_live_…" async></script>`.
 * It renders a launcher and a chat panel inside a shadow root (styles isolated from the page), starts a
 * widget session with the publishable key (`POST /api/v1/chat/widget/sessions`; the browser sends the
 * page's Origin, which the key must allow), and streams each answer as Server-Sent Events from
 * `POST /api/v1/chat/sessions/{id}/messages` with the session token. Keyboard and screen reader: the
 * launcher and send button are buttons with labels, the input has a label, the message log is an ARIA
 * live region, Escape closes the panel and focus returns to the launcher.
 */

interface WidgetSettings {
  title: string;
  primaryColor: string;
  textColor: string;
  position: 'bottom-right' | 'bottom-left';
  launcherText: string;
}

interface SessionStart {
  session: { id: string };
  greeting: { content: string } | null;
  sessionToken: string;
  widget: WidgetSettings;
}

interface Problem {
  code?: string;
  detail?: string;
  title?: string;
}

/** What the widget says when it cannot start (by problem code). */
const REFUSALS: Record<string, string> = {
  origin_not_allowed: 'This website is not allowed to use this chat.',
  no_published_version: 'This assistant is not available yet.',
  widget_disabled: 'Chat is turned off for this assistant.',
};

const script = document.currentScript as HTMLScriptElement | null;

function apiBase(): string {
  const src = script?.src ?? '';
  return `${new URL(src, location.href).origin}/api/v1`;
}

const STYLE = `
:host { all: initial; }
* { box-sizing: border-box; font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
.launcher { position: fixed; bottom: 20px; padding: 12px 18px; border: 0; border-radius: 24px; cursor: pointer; font-size: 15px; box-shadow: 0 4px 14px rgba(0,0,0,.2); z-index: 2147483000; }
.launcher:focus-visible, button:focus-visible, input:focus-visible { outline: 3px solid #ffbf47; outline-offset: 2px; }
.panel { position: fixed; bottom: 80px; width: 360px; max-width: calc(100vw - 40px); height: 480px; max-height: calc(100vh - 120px); display: flex; flex-direction: column; background: #fff; color: #111; border-radius: 12px; box-shadow: 0 8px 30px rgba(0,0,0,.25); overflow: hidden; z-index: 2147483000; }
.panel[hidden] { display: none; }
header { display: flex; align-items: center; justify-content: space-between; padding: 12px 14px; font-weight: 600; }
header button { background: transparent; border: 0; font-size: 20px; cursor: pointer; color: inherit; }
.log { flex: 1; overflow-y: auto; padding: 12px; display: flex; flex-direction: column; gap: 8px; }
.msg { max-width: 85%; padding: 8px 12px; border-radius: 10px; line-height: 1.4; white-space: pre-wrap; word-wrap: break-word; font-size: 14px; }
.agent { align-self: flex-start; background: #f1f3f5; }
.user { align-self: flex-end; color: #fff; }
.notice { align-self: center; color: #8a1c1c; font-size: 13px; text-align: center; }
form { display: flex; gap: 6px; padding: 10px; border-top: 1px solid #e5e7eb; }
label.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
input { flex: 1; padding: 9px 10px; border: 1px solid #c4c8cc; border-radius: 8px; font-size: 14px; }
form button { padding: 9px 14px; border: 0; border-radius: 8px; cursor: pointer; font-size: 14px; }
`;

/** Reads an SSE stream (`event:` / `data:` / blank line) and calls `on` per event. */
async function readEvents(res: Response, on: (type: string, data: any) => void): Promise<void> {
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let cut: number;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let type = 'message';
      const data: string[] = [];
      for (const line of frame.split('\n')) {
        if (line.startsWith('event:')) type = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      let parsed: unknown = null;
      try {
        parsed = data.length ? JSON.parse(data.join('\n')) : null;
      } catch {
        parsed = data.join('\n');
      }
      on(type, parsed);
    }
  }
}

function mount(key: string): void {
  const host = document.createElement('div');
  host.setAttribute('data-acp-widget', '');
  document.body.appendChild(host);
  const root = host.attachShadow({ mode: 'open' });
  root.innerHTML = `<style>${STYLE}</style>
    <button class="launcher" type="button" aria-expanded="false" aria-controls="acp-panel">Chat</button>
    <section class="panel" id="acp-panel" role="dialog" aria-label="Chat" hidden>
      <header><span class="title">Chat</span><button type="button" class="close" aria-label="Close chat">×</button></header>
      <div class="log" role="log" aria-live="polite" aria-relevant="additions text"></div>
      <form><label class="sr" for="acp-input">Your message</label><input id="acp-input" autocomplete="off" maxlength="10000" /><button type="submit">Send</button></form>
    </section>`;
  const launcher = root.querySelector<HTMLButtonElement>('.launcher')!;
  const panel = root.querySelector<HTMLElement>('.panel')!;
  const log = root.querySelector<HTMLElement>('.log')!;
  const form = root.querySelector<HTMLFormElement>('form')!;
  const input = root.querySelector<HTMLInputElement>('input')!;
  const send = root.querySelector<HTMLButtonElement>('form button')!;
  const header = root.querySelector<HTMLElement>('header')!;
  let session: SessionStart | null = null;
  let starting: Promise<void> | null = null;
  let busy = false;

  const add = (cls: string, text: string) => {
    const el = document.createElement('div');
    el.className = `msg ${cls}`;
    el.textContent = text;
    log.appendChild(el);
    log.scrollTop = log.scrollHeight;
    return el;
  };
  const refuse = (p: Problem) => {
    add('notice', REFUSALS[p.code ?? ''] ?? p.detail ?? 'The chat is unavailable right now.');
    input.disabled = true;
    send.disabled = true;
  };
  const style = (w: WidgetSettings) => {
    for (const el of [launcher, header, send]) {
      el.style.background = w.primaryColor;
      el.style.color = w.textColor;
    }
    const side = w.position === 'bottom-left' ? 'left' : 'right';
    launcher.style[side] = '20px';
    panel.style[side] = '20px';
    launcher.textContent = w.launcherText;
    root.querySelector('.title')!.textContent = w.title;
    panel.setAttribute('aria-label', w.title);
  };
  style({ title: 'Chat', primaryColor: '#1f4fd1', textColor: '#ffffff', position: 'bottom-right', launcherText: 'Chat' });

  const start = () =>
    (starting ??= (async () => {
      const res = await fetch(`${apiBase()}/chat/widget/sessions`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: '{}' }).catch(() => null);
      if (!res) {
        // The browser blocked the request: a refused origin fails its CORS preflight. Ask why.
        const status = await fetch(`${new URL(apiBase()).origin}/widget/status?key=${encodeURIComponent(key)}`)
          .then((r) => r.json() as Promise<{ originAllowed?: boolean }>)
          .catch(() => null);
        return refuse(status && status.originAllowed === false ? { code: 'origin_not_allowed' } : {});
      }
      const body = await res.json().catch(() => ({}));
      if (!res.ok) return refuse(body as Problem);
      session = (body as { data: SessionStart }).data;
      style(session.widget);
      if (session.greeting) add('agent', session.greeting.content);
    })());

  const open = (value: boolean) => {
    panel.hidden = !value;
    launcher.setAttribute('aria-expanded', String(value));
    if (value) {
      void start();
      input.focus();
    } else launcher.focus();
  };
  launcher.addEventListener('click', () => open(panel.hidden));
  root.querySelector('.close')!.addEventListener('click', () => open(false));
  panel.addEventListener('keydown', (e) => {
    if ((e as KeyboardEvent).key === 'Escape') open(false);
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const text = input.value.trim();
    if (!text || busy) return;
    await start();
    if (!session) return;
    busy = true;
    input.value = '';
    add('user', text).style.background = session.widget.primaryColor;
    const reply = add('agent', '');
    reply.setAttribute('aria-busy', 'true');
    try {
      const res = await fetch(`${apiBase()}/chat/sessions/${session.session.id}/messages`, {
        method: 'POST',
        headers: { authorization: `Bearer ${session.sessionToken}`, 'content-type': 'application/json', accept: 'text/event-stream' },
        body: JSON.stringify({ content: text }),
      });
      if (!res.ok) {
        const p = (await res.json().catch(() => ({}))) as Problem;
        reply.remove();
        add('notice', p.detail ?? 'The message could not be sent.');
      } else {
        await readEvents(res, (type, data) => {
          if (type === 'message.delta') reply.textContent += data.content;
          else if (type === 'message.completed' && data?.reply?.content) reply.textContent = data.reply.content;
          else if (type === 'error') add('notice', data?.detail ?? 'The answer failed.');
          log.scrollTop = log.scrollHeight;
        });
      }
    } catch {
      add('notice', 'The connection was lost.');
    } finally {
      reply.removeAttribute('aria-busy');
      busy = false;
    }
  });
  if (script?.dataset.open === 'true') open(true);
}

const key = script?.dataset.publishableKey;
if (key) {
  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', () => mount(key));
  else mount(key);
} else console.error('agent-control-plane widget: the script tag needs data-publishable-key');
