/** Shared documents of the knowledge tests: a real PDF made with pdfkit and a realistic HTML page. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import PDFDocument from 'pdfkit';

/** A real two-page PDF with a title in its metadata. */
export async function makePdf(pages: string[], title = 'Clinic handbook'): Promise<Buffer> {
  const doc = new PDFDocument({ info: { Title: title } });
  const parts: Buffer[] = [];
  doc.on('data', (b: Buffer) => parts.push(b));
  const done = new Promise<void>((r) => doc.on('end', () => r()));
  pages.forEach((text, i) => {
    if (i > 0) doc.addPage();
    doc.fontSize(12).text(text);
  });
  doc.end();
  await done;
  return Buffer.concat(parts);
}

/** A realistic HTML page: head, navigation, script, style, headings, a list and a table. */
export const SAMPLE_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Sunrise Dental &amp; Care — Opening hours</title>
  <style>body { font-family: sans-serif } .secret { color: red }</style>
  <script>window.trackingToken = "do-not-index-me";</script>
</head>
<body>
  <nav><a href="/">Home</a> | <a href="/about">About us</a> | <a href="/menu-item">Menu item</a></nav>
  <main>
    <h1>Opening hours</h1>
    <p>We are open Monday to Friday from 8am to 6pm, and on Saturday from 9am to 1pm.</p>
    <p>Emergency appointments are available on the same day when you call before 10am.</p>
    <h2>Insurance</h2>
    <ul><li>We accept Delta Dental.</li><li>We accept MetLife and Cigna.</li></ul>
    <table><tr><th>Service</th><th>Price</th></tr><tr><td>Cleaning</td><td>$90</td></tr></table>
    <p>Read our <a href="https://example.com/policy">cancellation policy</a> before booking.</p>
    <img src="/logo.png" alt="Logo">
  </main>
</body>
</html>`;

/** What a served path answers (status 200 by default). */
export interface ServedDocument {
  status?: number;
  type?: string;
  body: string | Buffer;
}

/**
 * A local HTTP server answering each path with its document (a function is asked on every request);
 * any other path is 404. Sources fetched through the guarded HTTP helper come from here.
 * @returns the base URL and a close that also drops kept-alive connections
 */
export async function serveDocuments(docs: Record<string, ServedDocument | (() => ServedDocument)>): Promise<{ base: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const entry = docs[req.url ?? ''];
    const doc = typeof entry === 'function' ? entry() : entry;
    if (!doc) {
      res.statusCode = 404;
      res.end();
      return;
    }
    res.statusCode = doc.status ?? 200;
    if (doc.type) res.setHeader('content-type', doc.type);
    res.end(doc.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
