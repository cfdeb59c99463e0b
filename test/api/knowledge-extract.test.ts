/**
 * Knowledge extraction and chunking (api/knowledge/*): real documents — an HTML page and a PDF made
 * with pdfkit — served by a local HTTP server and fetched through the guarded HTTP helper.
 */
import { expect } from 'chai';
import { chunkText } from '../../domain/knowledge/chunk';
import { detectFormat, extractDocument, UnsupportedContentError } from '../../domain/knowledge/extract';
import { createHttpClient, parseAllowList } from '../../providers/http';
import { makePdf, SAMPLE_HTML, serveDocuments } from './knowledge-fixtures';

describe('knowledge extraction', () => {
  let pages: Awaited<ReturnType<typeof serveDocuments>>;
  let base: string;
  let pdf: Buffer;
  const client = createHttpClient({ allow: parseAllowList('127.0.0.1') });

  before(async () => {
    pdf = await makePdf([
      'Refund policy. Refunds are issued within 30 days of purchase when the receipt is shown.',
      'Parking. Free parking is available behind the building on Elm Street.',
    ]);
    pages = await serveDocuments({
      '/hours.html': { type: 'text/html; charset=utf-8', body: SAMPLE_HTML },
      '/handbook.pdf': { type: 'application/pdf', body: pdf },
    });
    base = pages.base;
  });
  after(async () => {
    await client.close();
    await pages.close();
  });

  it('extracts the text and title of a real HTML page served over HTTP, without scripts, styles, navigation or link targets', async () => {
    const res = await client.get(`${base}/hours.html`);
    const doc = await extractDocument({ bytes: res.body, contentType: res.contentTypeHeader, filename: 'hours.html' });
    expect(doc.format).to.equal('html');
    expect(doc.title).to.equal('Sunrise Dental & Care — Opening hours');
    expect(doc.text).to.contain('We are open Monday to Friday from 8am to 6pm');
    expect(doc.text).to.contain('We accept MetLife and Cigna.');
    expect(doc.text).to.contain('Cleaning');
    expect(doc.text).to.contain('cancellation policy');
    expect(doc.text).not.to.contain('do-not-index-me');
    expect(doc.text).not.to.contain('font-family');
    expect(doc.text).not.to.contain('Menu item');
    expect(doc.text).not.to.contain('https://example.com/policy');
    expect(doc.text).to.contain('\n\n');
  });

  it('extracts the text of a real PDF (made with pdfkit) served over HTTP, page by page, with its title', async () => {
    const res = await client.get(`${base}/handbook.pdf`);
    expect(res.contentType).to.equal('application/pdf');
    const doc = await extractDocument({ bytes: res.body, contentType: res.contentTypeHeader, filename: 'handbook.pdf' });
    expect(doc.format).to.equal('pdf');
    expect(doc.title).to.equal('Clinic handbook');
    expect(doc.text).to.contain('Refunds are issued within 30 days of purchase');
    expect(doc.text).to.contain('Free parking is available behind the building');
    expect(doc.text.indexOf('Refund')).to.be.lessThan(doc.text.indexOf('Parking'));
  });

  it('turns Markdown into plain text and takes the first heading as the title', async () => {
    const md = '# Returns\n\nItems can be **returned** within [30 days](https://x.example/returns).\n\n- Keep the receipt\n- Bring the card\n';
    const doc = await extractDocument({ bytes: Buffer.from(md), contentType: 'text/markdown' });
    expect(doc.format).to.equal('markdown');
    expect(doc.title).to.equal('Returns');
    expect(doc.text).to.contain('Items can be returned within 30 days.');
    expect(doc.text).not.to.contain('**');
    expect(doc.text).not.to.contain('https://x.example');
    expect(doc.text).to.match(/Keep the receipt/);
  });

  it('decodes plain text with its declared charset and normalizes whitespace', async () => {
    const latin1 = Buffer.from('Caf\xe9 hours:\r\n\r\n\r\n\r\nopen   daily', 'latin1');
    const doc = await extractDocument({ bytes: latin1, contentType: 'text/plain; charset=iso-8859-1' });
    expect(doc.format).to.equal('text');
    expect(doc.text).to.equal('Café hours:\n\nopen daily');
  });

  it('drops NUL bytes and replaces unpaired surrogates with U+FFFD (Postgres stores neither) in text and title', async () => {
    const html = Buffer.from('<html><head><title>Ti\u0000tle</title></head><body><p>Hours: 9\u0000am</p></body></html>');
    const doc = await extractDocument({ bytes: html, contentType: 'text/html' });
    expect(doc.title).to.equal('Title');
    expect(doc.text).to.equal('Hours: 9am');
    const text = await extractDocument({ bytes: Buffer.from('Plain\u0000 text', 'utf8'), contentType: 'text/plain' });
    expect(text.text).to.equal('Plain text');
    const lone = await extractDocument({ bytes: Buffer.from('<html><head><title>T&#xD800;x</title></head><body><p>a&#xD800;b</p></body></html>'), contentType: 'text/html' });
    expect([lone.title, lone.text]).to.deep.equal(['T\uFFFDx', 'a\uFFFDb']);
  });

  it('detects the format from the file name or the bytes when the type is missing or generic', async () => {
    expect(detectFormat(pdf, 'application/octet-stream', 'x.bin')).to.equal('pdf');
    expect(detectFormat(Buffer.from('# T'), null, 'notes.md')).to.equal('markdown');
    expect(detectFormat(Buffer.from('# T'), 'text/plain', 'notes.md')).to.equal('markdown');
    expect(detectFormat(Buffer.from('<!DOCTYPE html><html></html>'), null, null)).to.equal('html');
    expect(detectFormat(Buffer.from('just words'), 'application/octet-stream', 'blob')).to.equal('text');
  });

  it('refuses images, archives and binary blobs as unsupported content', async () => {
    const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d]);
    for (const [bytes, type] of [[png, 'image/png'], [Buffer.from('PK\x03\x04'), 'application/zip'], [png, null]] as const) {
      try {
        await extractDocument({ bytes, contentType: type });
        expect.fail(`expected ${type} to be refused`);
      } catch (err) {
        expect(err).to.be.instanceOf(UnsupportedContentError);
      }
    }
  });

  it('refuses binary bytes declared or served as text (an ELF file labelled text/plain)', async () => {
    const elf = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), Buffer.alloc(120, 0)]);
    for (const type of ['text/plain', 'text/markdown', 'text/html', null]) {
      try {
        await extractDocument({ bytes: elf, contentType: type, filename: 'manual.txt' });
        expect.fail(`expected ${type} to be refused`);
      } catch (err) {
        expect(err, String(type)).to.be.instanceOf(UnsupportedContentError);
      }
    }
  });

  it('refuses a corrupt PDF as unsupported content', async () => {
    try {
      await extractDocument({ bytes: Buffer.from('%PDF-1.7\nthis is not really a pdf'), contentType: 'application/pdf' });
      expect.fail('expected a refusal');
    } catch (err) {
      expect(err).to.be.instanceOf(UnsupportedContentError);
    }
  });
});

describe('knowledge chunking', () => {
  const sentence = (i: number) => `Sentence number ${i} explains one small fact about the clinic and its services.`;
  const longText = Array.from({ length: 12 }, (_, p) => Array.from({ length: 6 }, (_, s) => sentence(p * 6 + s)).join(' ')).join('\n\n');

  it('cuts long text into passages of about 800 characters that end at sentence boundaries', () => {
    const chunks = chunkText(longText);
    expect(chunks.length).to.be.greaterThan(5);
    chunks.forEach((c, i) => {
      expect(c.ordinal).to.equal(i);
      expect(c.content.length).to.be.at.most(1200);
      expect(c.content).to.match(/\.$/);
      expect(c.content).to.match(/^Sentence number \d+/);
    });
    const middle = chunks.slice(0, -1).map((c) => c.content.length);
    expect(Math.min(...middle)).to.be.greaterThan(400);
    expect(Math.max(...middle)).to.be.at.most(800);
  });

  it('repeats the trailing sentence of a chunk at the start of the next one (overlap)', () => {
    const chunks = chunkText(longText);
    for (let i = 1; i < chunks.length; i++) {
      const firstSentence = /^Sentence number \d+[^.]*\./.exec(chunks[i].content)![0];
      expect(chunks[i - 1].content).to.contain(firstSentence);
    }
  });

  it('covers every sentence of the text', () => {
    const all = chunkText(longText).map((c) => c.content).join(' ');
    for (let i = 0; i < 72; i++) expect(all).to.contain(sentence(i));
  });

  it('keeps short paragraphs together and separates them with a blank line', () => {
    const chunks = chunkText('Hours: 9 to 5.\n\nParking: free.\n\nPhone: 555-0100.');
    expect(chunks).to.deep.equal([{ ordinal: 0, content: 'Hours: 9 to 5.\n\nParking: free.\n\nPhone: 555-0100.' }]);
  });

  it('splits a sentence longer than the hard cap at word boundaries', () => {
    const run = Array.from({ length: 600 }, (_, i) => `word${i}`).join(' ');
    const chunks = chunkText(run, { targetChars: 800, maxChars: 1000 });
    expect(chunks.length).to.be.greaterThan(3);
    for (const c of chunks) {
      expect(c.content.length).to.be.at.most(1000);
      expect(c.content).to.match(/^word\d+/);
      expect(c.content).to.match(/word\d+$/);
    }
  });

  it('is deterministic and gives nothing for blank text', () => {
    expect(chunkText(longText)).to.deep.equal(chunkText(longText));
    expect(chunkText('  \n\n  ')).to.deep.equal([]);
  });
});
