/**
 * The operator console's browser script (api/console/; docs/operations.md "Operator console"), loaded from this
 * origin under a strict CSP:
 * - a live page (`#live-state[data-live]`) follows its conversation over Server-Sent Events (`state`, `message` …
 *   `done`; docs/api-notes.md "Live control"), appending each new line to the transcript with who spoke;
 * - the analytics page draws its charts with chart.js (loaded before this script as the UMD global `Chart`) from
 *   the JSON in `#chart-data`.
 */

interface LiveMessage {
  id: string;
  seq: number;
  speaker: 'user' | 'agent' | 'contact' | 'operator';
  text: string;
  at: string;
}

interface LiveState {
  status: 'active' | 'ended';
  endReason: string | null;
  takenOverBy: string | null;
}

const WHO: Record<LiveMessage['speaker'], string> = { user: 'Person', contact: 'Contact', agent: 'Agent', operator: 'Team member' };

/** Follows the live stream of the page's conversation. */
function followLive(state: HTMLElement, url: string): void {
  const list = document.querySelector<HTMLOListElement>('ol.transcript');
  if (!list) return;
  const seen = new Set<string>(Array.from(list.querySelectorAll<HTMLElement>('li[data-seq]')).map((li) => li.dataset.seq ?? ''));
  let known: string | null = null;
  // A control submitted from this page navigates anyway: its own state change must not reload over it.
  let leaving = false;
  document.addEventListener('submit', () => (leaving = true));
  const source = new EventSource(url);
  window.addEventListener('pagehide', () => source.close());
  source.addEventListener('message', (e) => {
    const m = JSON.parse((e as MessageEvent<string>).data) as LiveMessage;
    if (seen.has(m.id)) return;
    seen.add(m.id);
    const li = document.createElement('li');
    li.className = m.speaker;
    li.dataset.seq = m.id;
    const who = document.createElement('span');
    who.className = 'who';
    who.textContent = `${WHO[m.speaker]} · ${m.at.replace('T', ' ').replace(/\.\d+Z$|Z$/, ' UTC')}`;
    li.append(who, document.createTextNode(m.text));
    list.append(li);
  });
  source.addEventListener('state', (e) => {
    const s = JSON.parse((e as MessageEvent<string>).data) as LiveState;
    const key = `${s.status}:${s.takenOverBy ?? ''}`;
    // The controls on the page depend on the state: a change made elsewhere reloads them.
    if (known !== null && key !== known) {
      source.close();
      if (!leaving) window.location.reload();
      return;
    }
    known = key;
    if (s.status === 'ended') state.textContent = `Ended (${s.endReason ?? 'ended'}).`;
  });
  source.addEventListener('done', () => {
    source.close();
    state.textContent = 'The conversation ended.';
    document.querySelectorAll<HTMLElement>('.controls').forEach((c) => c.remove());
  });
  source.onerror = () => {
    // The browser reconnects on its own; a closed stream (signed out) stops here.
    if (source.readyState === EventSource.CLOSED) state.textContent = 'Live updates stopped; reload the page.';
  };
}

interface ChartData {
  labels: string[];
  volume: number[];
  spend: number[];
  outcomes: { outcome: string; n: number }[];
  latency: { stage: string; p50: number; p95: number; p99: number }[];
}

/** The subset of chart.js's UMD global this script uses. */
declare const Chart: new (canvas: HTMLCanvasElement, config: unknown) => unknown;

/** Draws the analytics charts. */
function drawCharts(data: ChartData): void {
  const make = (id: string, config: unknown) => {
    const canvas = document.getElementById(id) as HTMLCanvasElement | null;
    if (canvas) new Chart(canvas, config);
  };
  const options = { responsive: true, maintainAspectRatio: false, animation: false, scales: { y: { beginAtZero: true } } };
  make('chart-volume', { type: 'line', data: { labels: data.labels, datasets: [{ label: 'Conversations', data: data.volume, borderColor: '#3b4bd8', tension: 0.2 }] }, options });
  make('chart-outcomes', { type: 'bar', data: { labels: data.outcomes.map((o) => o.outcome), datasets: [{ label: 'Conversations', data: data.outcomes.map((o) => o.n), backgroundColor: '#3b4bd8' }] }, options });
  make('chart-latency', {
    type: 'bar',
    data: {
      labels: data.latency.map((l) => l.stage),
      datasets: [
        { label: 'p50', data: data.latency.map((l) => l.p50), backgroundColor: '#8d98ff' },
        { label: 'p95', data: data.latency.map((l) => l.p95), backgroundColor: '#3b4bd8' },
        { label: 'p99', data: data.latency.map((l) => l.p99), backgroundColor: '#1d2670' },
      ],
    },
    options,
  });
  make('chart-spend', { type: 'bar', data: { labels: data.labels, datasets: [{ label: 'USD', data: data.spend, backgroundColor: '#17643a' }] }, options });
}

function start(): void {
  const state = document.getElementById('live-state');
  const url = state?.dataset.live;
  if (state && url) followLive(state, url);
  const chart = document.getElementById('chart-data');
  if (chart?.textContent && typeof Chart === 'function') drawCharts(JSON.parse(chart.textContent) as ChartData);
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
