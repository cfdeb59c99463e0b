/**
 * The voice test page (docs/voice.md): `GET /api/v1/voice/talk?token=tt_…` serves one HTML page
 * that opens the relay with the voice talk token and speaks the carrier's side of ConversationRelay from
 * the browser — `setup`, then a final `prompt` per typed line (or per recognized utterance where the
 * browser has the Web Speech API's SpeechRecognition), `dtmf` for keypad buttons — and shows (and, with
 * speechSynthesis, speaks) the agent's `text` tokens. The token is checked by the relay, not here.
 * It wears the shared page frame (api/pages/theme.ts).
 */
import { brandHeader, HEAD_LINKS, PRODUCT_NAME } from '../pages/theme';

/** The page's HTML (no external assets; the token is read from the page's own URL). */
export const TALK_PAGE_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Talk to the agent · ${PRODUCT_NAME}</title>
<meta name="viewport" content="width=device-width,initial-scale=1">${HEAD_LINKS}
<style>#log{margin:1rem 0;min-height:4rem}#log p{margin:.4rem 0;padding:.4rem .7rem;border-radius:8px;background:var(--bg)}.agent{color:var(--accent)}.you{text-align:right}#say{display:flex;gap:.5rem;align-items:end;flex-wrap:wrap}#say label{flex:1;margin:0}#keys{display:grid;grid-template-columns:repeat(3,3rem);gap:.3rem;margin-top:1rem}#keys button{margin:0;padding:.5rem 0}</style>
</head><body>${brandHeader()}<main class="card">
<h1>Talk to the agent</h1>
<p id="status" role="status" class="muted">Connecting…</p>
<div id="log" aria-live="polite"></div>
<form id="say"><label for="line">You say <input id="line" type="text" autocomplete="off" required></label> <button type="submit" class="primary">Send</button> <button type="button" id="mic" class="secondary" hidden>Speak</button></form>
<div id="keys" aria-label="Keypad">${'123456789*0#'.split('').map((k) => `<button type="button" class="secondary" data-key="${k}">${k}</button>`).join('')}</div>
</main>
<script>
(function () {
  var token = new URLSearchParams(location.search).get('token') || '';
  var ws = new WebSocket((location.protocol === 'https:' ? 'wss:' : 'ws:') + '//' + location.host + '/api/v1/voice/relay?token=' + encodeURIComponent(token));
  var log = document.getElementById('log'), status = document.getElementById('status'), current = null;
  function line(cls, text) { var p = document.createElement('p'); p.className = cls; p.textContent = text; log.appendChild(p); return p; }
  ws.onopen = function () {
    status.textContent = 'Connected';
    ws.send(JSON.stringify({ type: 'setup', sessionId: 'browser-' + Date.now(), callSid: 'browser', from: '', to: '', direction: 'inbound', customParameters: {} }));
  };
  ws.onmessage = function (e) {
    var f = JSON.parse(e.data);
    if (f.type === 'text') {
      if (!current) current = line('agent', '');
      current.textContent += f.token;
      if (f.last) { if (window.speechSynthesis && current.textContent) speechSynthesis.speak(new SpeechSynthesisUtterance(current.textContent)); current = null; }
    } else if (f.type === 'end') status.textContent = 'The agent ended the call';
  };
  ws.onclose = function (e) { status.textContent = 'Call ended' + (e.reason ? ': ' + e.reason : ''); };
  function say(text) { if (!text || ws.readyState !== 1) return; line('you', text); ws.send(JSON.stringify({ type: 'prompt', voicePrompt: text, lang: 'en-US', last: true })); }
  document.getElementById('say').onsubmit = function (e) { e.preventDefault(); var i = document.getElementById('line'); say(i.value.trim()); i.value = ''; };
  document.getElementById('keys').onclick = function (e) { var k = e.target.getAttribute && e.target.getAttribute('data-key'); if (k && ws.readyState === 1) ws.send(JSON.stringify({ type: 'dtmf', digit: k })); };
  var SR = window.SpeechRecognition || window.webkitSpeechRecognition;
  if (SR) {
    var mic = document.getElementById('mic'); mic.hidden = false;
    mic.onclick = function () { var r = new SR(); r.lang = 'en-US'; r.onresult = function (ev) { say(ev.results[0][0].transcript); }; r.start(); };
  }
})();
</script></body></html>`;
