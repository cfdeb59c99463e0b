/**
 * A deterministic embeddings double served over OpenAI's wire format (OpenAI API reference "Embeddings":
 * `POST /v1/embeddings {model, input, dimensions?}` → `{object: 'list', data: [{object: 'embedding', index,
 * embedding}], model, usage}`), on the loopback stub of ./llm.ts, for tests and benchmarks of semantic retrieval.
 *
 * The vector is "semantic-ish": words are mapped to concepts through a small English/Spanish synonym table
 * (`hours`, `open`, `horario`, `abren` → SCHEDULE; `car`, `parking`, `coche` → CAR…), each concept and each
 * unmapped word stem is hashed to signed dimensions (the hashing trick: Weinberger et al., "Feature Hashing for Large
 * Scale Multitask Learning", ICML 2009), concepts weighing more than bare words. So a paraphrase that shares no word
 * with its answer ("When can I come in?" / "open Monday to Friday") still lands near it, as with a real model,
 * while the test stays offline and exact.
 */
import { answerWith, startOpenAiStub, type OpenAiStub, type StubHandler } from './llm';

/** Default dimensions of the double's vectors (≤ 100: the exact `cube` path of the embedded default). */
export const DOUBLE_DIMENSIONS = 96;

/** Concepts by word prefix (accents stripped, lower case); the longest matching prefix wins. */
const CONCEPTS: Record<string, string[]> = {
  SCHEDULE: ['hour', 'open', 'close', 'time', 'when', 'monday', 'tuesday', 'thursday', 'friday', 'saturday', 'sunday', 'weekend', 'daily', 'horario', 'hora', 'abre', 'abri', 'abiert', 'cierr', 'lunes', 'viernes', 'sabado', 'domingo', 'festiv', 'cuando', 'atiend', 'llamar', 'llamarl'],
  PLACE: ['where', 'locat', 'address', 'street', 'floor', 'corner', 'building', 'donde', 'direcc', 'calle', 'barrio', 'lleg', 'cobertur', 'codigo', 'postal', 'hogar', 'zona'],
  CAR: ['car', 'cars', 'park', 'vehicle', 'coche', 'aparc', 'electric', 'charger', 'charging'],
  INSURANCE: ['insur', 'coverag', 'cigna', 'delta', 'metlife', 'seguro', 'insurer'],
  PAY: ['pay', 'paid', 'card', 'cards', 'cash', 'credit', 'debit', 'instalment', 'installment', 'visa', 'mastercard', 'deposit', 'pag', 'tarjeta', 'efectivo', 'transferencia', 'domicilia'],
  PRICE: ['cost', 'price', 'much', 'fee', 'charge', 'dollar', 'free', 'cuest', 'precio', 'cobr', 'gratu', 'coste', 'cuanto', 'euro', 'recargo', 'penal', 'tarifa'],
  CANCEL: ['cancel', 'resched', 'miss', 'call', 'show', 'baja', 'anul', 'cancelar'],
  CONTRACT: ['contrat', 'permanenc', 'compromis', 'commit'],
  FIRST: ['first', 'new', 'expect', 'primer', 'nuevo', 'exam', 'history'],
  CHILD: ['child', 'kid', 'son', 'daughter', 'baby', 'paediat', 'pediat', 'nino', 'hijo', 'cot', 'babysit', 'parent'],
  WHITEN: ['whiten', 'white', 'bleach', 'blanque'],
  FEAR: ['scare', 'nerv', 'anxi', 'afraid', 'fear', 'sedat', 'calm', 'miedo'],
  RECORDS: ['record', 'ray', 'rays', 'transfer', 'notes', 'histor'],
  EAT: ['eat', 'food', 'breakfast', 'meal', 'restaurant', 'lunch', 'comer', 'desayun', 'vegan', 'gluten'],
  PAIN: ['pain', 'hurt', 'ache', 'toothache', 'emergen', 'swell', 'urgent', 'night', 'dolor', 'urgenc'],
  TREAT: ['root', 'canal', 'filling', 'crown', 'clean', 'dentistr', 'treatment'],
  NET: ['internet', 'conex', 'online', 'wifi', 'network', 'password', 'red'],
  OUTAGE: ['averi', 'reinici', 'tengo', 'funcion', 'down', 'broken'],
  SPEED: ['lent', 'despac', 'slow', 'velocid', 'rapid', 'fast', 'speed', 'mb', 'gb', 'test'],
  PHONE: ['numero', 'movil', 'telefon', 'number', 'phone', 'portab', 'conserv', 'mantener', 'compan'],
  BILL: ['factur', 'recibo', 'invoice', 'bill', 'pdf', 'descarg'],
  MOVE: ['mudanz', 'traslad', 'vivir', 'piso', 'casa', 'domicilio', 'cambi'],
  ROUTER: ['router', 'devolv', 'devuel', 'return'],
  INSTALL: ['instala', 'tecnico'],
  DURATION: ['tard', 'long', 'plazo', 'takes', 'durat', 'session'],
  ROOM: ['room', 'check', 'habitac', 'arriv', 'key', 'stay'],
  PET: ['dog', 'cat', 'pet', 'puppy', 'animal', 'perro', 'mascot'],
  TRAVEL: ['airport', 'plane', 'fly', 'flight', 'land', 'shuttle', 'pick', 'aeropuerto', 'vuelo', 'bus'],
  SPA: ['spa', 'sauna', 'steam', 'pool', 'swim', 'massag', 'relax'],
  ACTIVITY: ['kayak', 'bicycl', 'bike', 'snowsho', 'walk', 'hike', 'rent', 'summer', 'winter'],
  ACCESS: ['wheelchair', 'accessib', 'disab', 'step', 'ramp', 'grab'],
  BOOK: ['book', 'reserv', 'appointment', 'cita'],
};

/** Words that carry no meaning here (English and Spanish). */
const STOP = new Set(
  ('a an the and or of to in on at by for with is are be do does did can could i you your we our my me it its this that there what which how ' +
    'if will would should as from up into after before about any some all so not no more most very just also ' +
    'el la los las un una de del y o en a por para con que es son mi mis su sus se le lo me qué cómo hay algún al puedo ' +
    'quiero voy otro otra me muy y ya usted ustedes nos nuestro nuestros').split(/\s+/),
);

const PREFIXES = Object.entries(CONCEPTS)
  .flatMap(([concept, ps]) => ps.map((p) => ({ p, concept })))
  .sort((a, b) => b.p.length - a.p.length);

function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** Words of a text: lower case, accents stripped, letters and digits. */
function tokens(text: string): string[] {
  return (text.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((w) => !STOP.has(w));
}

/** The double's vector of `text` (module docstring), unit length. */
export function conceptEmbedding(text: string, dims: number = DOUBLE_DIMENSIONS): number[] {
  const v = new Array<number>(dims).fill(0);
  const add = (feature: string, weight: number) => {
    for (const salt of ['a', 'b']) {
      const h = fnv1a(`${salt}:${feature}`);
      v[h % dims] += (h & 0x80000000 ? -1 : 1) * weight;
    }
  };
  for (const w of tokens(text)) {
    const hit = PREFIXES.find(({ p }) => (p.length <= 3 ? w === p || w === `${p}s` : w.startsWith(p)));
    if (hit) add(`concept:${hit.concept}`, 1);
    else add(`word:${w.slice(0, 6)}`, 0.35);
  }
  const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  return n > 0 ? v.map((x) => x / n) : v;
}

/** The stub's handler: `/embeddings` answers with the double's vectors; anything else as ./llm.ts `answerWith`. */
export function embeddingsHandler(fallback: StubHandler = answerWith({ content: 'ok' })): StubHandler {
  return (req, res) => {
    if (!req.path.endsWith('/embeddings')) return fallback(req, res);
    const input: string[] = Array.isArray(req.body?.input) ? req.body.input : [String(req.body?.input ?? '')];
    const dims = Number(req.body?.dimensions) || DOUBLE_DIMENSIONS;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify({
        object: 'list',
        data: input.map((t, index) => ({ object: 'embedding', index, embedding: conceptEmbedding(t, dims) })),
        model: req.body?.model ?? 'concept-double',
        usage: { prompt_tokens: input.join(' ').split(/\s+/).length, total_tokens: input.join(' ').split(/\s+/).length },
      }),
    );
  };
}

/** Starts the loopback server with {@link embeddingsHandler}; its `baseUrl` goes in EMBEDDINGS_BASE_URL. */
export function startEmbeddingsStub(fallback?: StubHandler): Promise<OpenAiStub> {
  return startOpenAiStub(embeddingsHandler(fallback));
}
