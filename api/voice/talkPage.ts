/**
 * The voice test page (docs/voice.md "Voice talk token"): `GET /api/v1/voice/talk?token=tt_…` serves one
 * HTML page that first asks `GET /api/v1/voice/talk/info?token=…` ({@link talkPageInfo}) whom the token
 * talks to — an invalid or expired token is said so before any call starts — and, on Start, opens the relay
 * with the voice talk token and speaks the carrier's side of ConversationRelay from the browser: `setup`,
 * then a final `prompt` per typed line (or per recognized utterance where the browser has the Web Speech
 * API's SpeechRecognition), `dtmf` for keypad buttons (shown only when the agent takes keypad input) — and
 * shows (and, with speechSynthesis, speaks) the agent's `text` tokens. Hang-up closes the socket (1000).
 * The relay checks the token again on its own. With tracing on, the info answer's `traceparent` goes with the relay
 * URL, so the call's `voice.call` span continues the page's trace (api/voice/relay.ts `relayTraceContext`). It wears
 * the shared page frame (api/pages/theme.ts).
 */
import type { Db } from '../../db';
import { getAgent } from '../../db/repositories/agents';
import { getVersion } from '../../db/repositories/agentVersions';
import { effectiveDtmf, type CompiledAgent } from '../../domain/agents/compile';
import { resolveTalkToken } from '../agents/talkToken';
import { brandHeader, HEAD_LINKS, PRODUCT_NAME } from '../pages/theme';

/** What the talk page may learn from its token: the agent's name and version, and whether it takes keypad input. */
export interface TalkPageInfo {
  agentName: string;
  /** The frozen version's number (published mode) or the draft's version (draft mode). */
  version: number;
  mode: 'published' | 'draft';
  /** The agent's `dtmf.enabled`: the page shows its keypad only then. */
  dtmfEnabled: boolean;
}

/**
 * The talk page's facts for a voice talk token: nothing beyond the names the page shows.
 * @returns undefined when the token is malformed, forged, expired, not a voice token, or its agent or version is gone
 */
export async function talkPageInfo(db: Db, token: string): Promise<TalkPageInfo | undefined> {
  const claims = await resolveTalkToken(db, token);
  if (!claims || claims.ch !== 'voice') return undefined;
  if (claims.ver) {
    const v = await getVersion(db, claims.org, claims.agt, claims.ver);
    if (!v) return undefined;
    const snapshot = v.snapshot as CompiledAgent;
    return { agentName: snapshot.name, version: v.version.number, mode: 'published', dtmfEnabled: effectiveDtmf(snapshot.dtmf).enabled };
  }
  // Draft mode runs the agent's current draft (services/conversations/service.ts startConversation).
  const agent = await getAgent(db, claims.org, claims.agt);
  if (!agent) return undefined;
  return { agentName: agent.name, version: agent.version, mode: 'draft', dtmfEnabled: effectiveDtmf(agent.dtmf).enabled };
}

/** The message the page shows for a token the info endpoint refuses. */
export const INVALID_LINK_MESSAGE = 'This link is invalid or has expired — ask for a new one';

/** The page's HTML (no external assets; the token is read from the page's own URL). */
export const TALK_PAGE_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Talk to the agent · ${PRODUCT_NAME}</title>
<meta name="viewport" content="width=device-width,initial-scale=1">${HEAD_LINKS}
<style>#log{margin:1rem 0;min-height:4rem}#log p{margin:.4rem 0;padding:.4rem .7rem;border-radius:8px;background:var(--bg)}.agent{color:var(--accent)}.you{text-align:right}
#controls,#say{display:flex;gap:.5rem;align-items:end;flex-wrap:wrap}#controls{align-items:center}main button:disabled{opacity:.5;cursor:not-allowed}#controls button,#say button{width:auto}#say label{flex:1;margin:0}
#phase{display:inline-block;padding:.15rem .6rem;border-radius:999px;border:1px solid var(--line);font-size:.9rem}#phase[data-phase=speaking]{color:var(--accent);border-color:var(--accent)}#phase[data-phase=listening]{color:var(--notice);border-color:var(--notice)}
#mic.listening{border-color:var(--error);color:var(--error)}
#keypad{margin-top:1rem}#keys{display:grid;grid-template-columns:repeat(3,3.2rem);grid-template-rows:repeat(4,2.6rem);gap:.35rem}#keys button{margin:0;padding:0;width:3.2rem;height:2.6rem;font-size:1.1rem}#keys button.pressed{background:var(--accent);color:var(--accent-text)}#digits{min-height:1.4rem;font-family:monospace;letter-spacing:.2em}</style>
</head><body>${brandHeader()}<main class="card">
<h1>Talk to the agent</h1>
<p id="agent" class="muted" hidden></p>
<p id="invalid" class="error" role="alert" hidden>${INVALID_LINK_MESSAGE}</p>
<div id="call" hidden>
<div id="controls"><button type="button" id="start" class="primary">Start</button> <button type="button" id="hangup" class="secondary" disabled>Hang up</button> <span id="phase" data-phase="idle">Not started</span></div>
<p id="status" role="status" class="muted">Press Start to call the agent</p>
<div id="log" aria-live="polite"></div>
<form id="say"><label for="line">You say <input id="line" type="text" autocomplete="off" required disabled></label> <button type="submit" class="primary" disabled>Send</button> <button type="button" id="mic" class="secondary" disabled>Speak</button></form>
<p id="speech-error" class="error" role="alert" hidden></p>
<div id="keypad" hidden><div id="keys" role="group" aria-label="Keypad">${'123456789*0#'.split('').map((k) => `<button type="button" class="secondary" data-key="${k}" disabled>${k}</button>`).join('')}</div>
<p class="muted">Pressed: <output id="digits" aria-live="polite"></output></p></div>
</div>
</main>
<script>
(function () {
  var token = new URLSearchParams(location.search).get('token') || '';
  var $ = function (id) { return document.getElementById(id); };
  var log = $('log'), status = $('status'), phase = $('phase'), start = $('start'), hangup = $('hangup'), mic = $('mic');
  var ws = null, current = null, recognition = null, traceparent = '', keys = null;
  // Speech recognition errors in words (Web Speech API SpeechRecognitionErrorEvent.error), never the raw code.
  var SPEECH_ERRORS = {
    'not-allowed': 'Microphone access was refused. Allow it in the browser, or type instead.',
    'service-not-allowed': 'This browser does not allow speech recognition here. Type instead.',
    'audio-capture': 'No microphone was found. Connect one, or type instead.',
    'network': 'Speech recognition could not reach its service. Type instead.',
    'language-not-supported': 'Speech recognition does not support this language here. Type instead.'
  };
  function speechError(code) { return SPEECH_ERRORS[code] || 'Speech recognition stopped working. Type instead.'; }
  var PHASES = { idle: 'Not started', connecting: 'Connecting…', listening: 'Listening', speaking: 'Agent speaking', ended: 'Call ended' };
  function setPhase(p) { phase.setAttribute('data-phase', p); phase.textContent = PHASES[p]; }
  function line(cls, text) { var p = document.createElement('p'); p.className = cls; p.textContent = text; log.appendChild(p); return p; }
  function inCall(on) {
    start.disabled = on; hangup.disabled = !on;
    $('line').disabled = !on; document.querySelector('#say button[type=submit]').disabled = !on;
    mic.disabled = !on || !SR;
    Array.prototype.forEach.call(document.querySelectorAll('#keys button'), function (b) { b.disabled = !on; });
  }
  function invalid() { $('invalid').hidden = false; $('call').hidden = true; }
  var SR = window.SpeechRecognition || window.webkitSpeechRecognition;
  // No Web Speech API (https://wicg.github.io/speech-api/): the button says so instead of doing nothing.
  if (!SR) mic.textContent = 'Speaking needs a browser with speech recognition';

  fetch('/api/v1/voice/talk/info?token=' + encodeURIComponent(token), { cache: 'no-store' })
    .then(function (r) { traceparent = r.headers.get('traceparent') || ''; return r.json(); })
    .then(function (info) {
      if (!info || !info.valid) return invalid();
      var a = $('agent'); a.hidden = false;
      a.textContent = info.agentName + ' · ' + (info.mode === 'draft' ? 'draft ' + info.version : 'version ' + info.version);
      $('keypad').hidden = !info.dtmfEnabled;
      $('call').hidden = false;
    }, function () { status.textContent = 'Could not reach the service; reload to try again'; $('call').hidden = false; start.disabled = true; });

  start.onclick = function () {
    var opened = false;
    log.textContent = ''; $('digits').textContent = ''; current = null; keys = null;
    var err = $('speech-error'); err.hidden = true; err.textContent = '';
    start.disabled = true; setPhase('connecting'); status.textContent = 'Connecting…';
    ws = new WebSocket((location.protocol === 'https:' ? 'wss:' : 'ws:') + '//' + location.host + '/api/v1/voice/relay?token=' + encodeURIComponent(token) + (traceparent ? '&traceparent=' + encodeURIComponent(traceparent) : ''));
    ws.onopen = function () {
      opened = true; inCall(true); setPhase('listening');
      status.textContent = 'Connected';
      ws.send(JSON.stringify({ type: 'setup', sessionId: 'browser-' + Date.now(), callSid: 'browser', from: '', to: '', direction: 'inbound', customParameters: {} }));
    };
    ws.onmessage = function (e) {
      var f = JSON.parse(e.data);
      if (f.type === 'text') {
        setPhase('speaking');
        keys = null;
        if (!current) current = line('agent', '');
        current.textContent += f.token;
        if (f.last) {
          var said = current.textContent; current = null;
          if (window.speechSynthesis && said) {
            var u = new SpeechSynthesisUtterance(said);
            u.onend = u.onerror = function () { if (ws && ws.readyState === 1) setPhase('listening'); };
            speechSynthesis.speak(u);
          }
          setPhase('listening');
        }
      } else if (f.type === 'end') status.textContent = 'The agent ended the call';
    };
    ws.onclose = function (e) {
      ws = null; inCall(false); setPhase('ended');
      if (window.speechSynthesis) speechSynthesis.cancel();
      if (recognition) recognition.abort();
      // Refused before the upgrade (RFC 6455 §4.1: the browser sees only a failed connection): the token no longer holds.
      if (!opened) return invalid();
      if (status.textContent !== 'The agent ended the call') status.textContent = 'Call ended' + (e.reason ? ': ' + e.reason : '');
    };
  };
  hangup.onclick = function () { if (ws) ws.close(1000, 'hung up'); };

  function say(text) { if (!text || !ws || ws.readyState !== 1) return; keys = null; line('you', text); ws.send(JSON.stringify({ type: 'prompt', voicePrompt: text, lang: 'en-US', last: true })); }
  $('say').onsubmit = function (e) { e.preventDefault(); var i = $('line'); say(i.value.trim()); i.value = ''; };
  $('keys').onclick = function (e) {
    var b = e.target.closest && e.target.closest('button'), k = b && b.getAttribute('data-key');
    if (!k || !ws || ws.readyState !== 1) return;
    ws.send(JSON.stringify({ type: 'dtmf', digit: k }));
    $('digits').textContent += k;
    // The caller's keypad input is a line of the transcript too, one per run of keys.
    if (!keys) keys = line('you', 'Keypad: ');
    keys.textContent += k;
    b.classList.add('pressed'); setTimeout(function () { b.classList.remove('pressed'); }, 150);
  };
  mic.onclick = function () {
    if (!SR) return;
    if (recognition) { recognition.stop(); return; }
    var r = recognition = new SR(); r.lang = 'en-US';
    var err = $('speech-error'); err.hidden = true;
    r.onstart = function () { mic.classList.add('listening'); mic.textContent = 'Listening… (press to stop)'; };
    r.onresult = function (ev) { say(ev.results[0][0].transcript); };
    r.onerror = function (ev) {
      // Silence and our own stop are not failures; anything else is said once, in words.
      if (ev.error === 'no-speech' || ev.error === 'aborted') return;
      err.hidden = false; err.textContent = speechError(ev.error);
    };
    r.onend = function () { recognition = null; mic.classList.remove('listening'); mic.textContent = 'Speak'; };
    try { r.start(); } catch (x) { recognition = null; err.hidden = false; err.textContent = speechError(''); }
  };
})();
</script></body></html>`;
