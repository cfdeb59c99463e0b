/** Shared documents of the knowledge tests: a real PDF made with pdfkit and a realistic HTML page. */
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
