import { expect } from 'chai';
import { detectTextSearchConfig, sourceTextSearchConfig, textSearchConfigForLanguage } from '../../../domain/knowledge/language';
import { reciprocalRankFusion, retrievalTurns, weightedQueryVector } from '../../../domain/knowledge/fusion';

describe('knowledge text-search language', () => {
  it('detects the language of running prose from its function words', () => {
    expect(detectTextSearchConfig('The clinic is open Monday to Friday and we are closed on Sundays. You can pay with your card.')).to.equal('english');
    expect(detectTextSearchConfig('Nuestro servicio de atención al cliente atiende de lunes a viernes y los sábados por la mañana, con el chat de la aplicación.')).to.equal('spanish');
    expect(detectTextSearchConfig('Le cabinet est ouvert du lundi au vendredi et nous sommes fermés le dimanche pour les patients.')).to.equal('french');
    expect(detectTextSearchConfig('Die Praxis ist von Montag bis Freitag geöffnet und wir sind am Sonntag nicht für Sie da.')).to.equal('german');
  });

  it("falls back to the agent's language when the text is too short to tell, and to simple without a stemmer", () => {
    expect(detectTextSearchConfig('Horario 9-17')).to.equal(null);
    expect(sourceTextSearchConfig('Horario 9-17', 'es-MX')).to.equal('spanish');
    expect(textSearchConfigForLanguage('pt-BR')).to.equal('portuguese');
    expect(textSearchConfigForLanguage('ja-JP')).to.equal('simple');
    expect(sourceTextSearchConfig('営業時間は午前9時から午後5時までです', 'ja-JP')).to.equal('simple');
  });

  it('reads Spanish prose rich in "de" as Spanish, not Dutch, on a Spanish agent and without a prior', () => {
    const text = 'Reservamos mesas para grupos grandes. Aceptamos pagos con tarjeta de crédito. Abrimos de martes a domingo desde las nueve de la mañana.';
    expect(sourceTextSearchConfig(text, 'es-ES')).to.equal('spanish');
    expect(detectTextSearchConfig(text)).to.equal('spanish');
  });

  it("lets a clear detection overrule the agent's language, and the agent's language settle a close call", () => {
    const english = 'The clinic is open Monday to Friday and we are closed on Sundays. You can pay with your card.';
    expect(sourceTextSearchConfig(english, 'es-MX')).to.equal('english');
    // Short Portuguese-or-Spanish text: the agent's language decides.
    expect(sourceTextSearchConfig('Aceitamos cartões de crédito e reservas para grupos.', 'pt-BR')).to.equal('portuguese');
  });
});

describe('hybrid retrieval arithmetic', () => {
  it('fuses ranked lists by reciprocal rank fusion (k = 60), scored 0..1', () => {
    const fused = reciprocalRankFusion([
      { ids: ['a', 'b', 'c'], weight: 1 },
      { ids: ['b', 'd'], weight: 1 },
    ]);
    expect(fused.map((f) => f.id)).to.deep.equal(['b', 'a', 'd', 'c']);
    expect(fused[0].score).to.be.closeTo((1 / 62 + 1 / 61) / (2 / 61), 1e-9);
    expect(reciprocalRankFusion([{ ids: ['x'], weight: 1 }])[0].score).to.equal(1);
  });

  it('reads the current turn and up to two earlier user turns, most recent first, without repeats', () => {
    expect(retrievalTurns('how much?', ['hi', 'whitening?', 'how much?', 'for my son'])).to.deep.equal(['how much?', 'for my son', 'whitening?']);
  });

  it('weights the query vector toward the current turn', () => {
    const v = weightedQueryVector([[1, 0], [0, 1]]);
    expect(v[0]).to.be.greaterThan(v[1]);
    expect(Math.hypot(v[0], v[1])).to.be.closeTo(1, 1e-9);
  });
});
