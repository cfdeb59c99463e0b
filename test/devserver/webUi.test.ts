/**
 * The Web UI listener (devserver/http/ui.ts, docs/operations.md "Inspecting workflows"): while the
 * UI is built in the background (`npm start` on a fresh clone) every page is a self-refreshing
 * "building…" page and the HTTP API answers; once built, the app; after a failed build, its error.
 * The raw history download answers on the app's and on the real UI server's path.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { HttpApiHandler } from '../../devserver/http/gateway';
import { rawHistoryPath, serveWebUi, uiSettings, type WebUiServer } from '../../devserver/http/ui';

describe('the Web UI listener', () => {
  let dir: string;
  const servers: WebUiServer[] = [];
  const seen: string[] = [];
  const httpApi: HttpApiHandler = async (req, res) => {
    seen.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{}');
  };
  const start = async (building?: Promise<unknown>) => {
    const ui = await serveWebUi({ buildDir: dir, building, httpApi, host: '127.0.0.1', port: 0, defaultNamespace: 'default', version: '2.38.0' });
    servers.push(ui);
    return ui;
  };

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'acp-ui-'));
  });
  afterEach(async () => {
    for (const s of servers.splice(0)) await s.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers a self-refreshing building page until the background build is done, and the API meanwhile', async () => {
    let done!: () => void;
    const building = new Promise<void>((resolve) => (done = resolve));
    const ui = await start(building);
    const page = await fetch(`${ui.url}/namespaces/default/workflows`);
    expect(page.status).to.equal(503);
    const html = await page.text();
    expect(html).to.include('Building the Temporal Web UI');
    expect(html).to.match(/<meta http-equiv="refresh" content="3">/);
    expect((await fetch(`${ui.url}/api/v1/settings`)).status).to.equal(200);
    expect((await fetch(`${ui.url}/api/v1/namespaces`)).status).to.equal(200);

    fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html><title>app</title>');
    done();
    await building;
    await new Promise((r) => setImmediate(r));
    await new Promise((r) => setTimeout(r, 20));
    const app = await fetch(`${ui.url}/namespaces/default/workflows`);
    expect(app.status).to.equal(200);
    expect(await app.text()).to.include('<title>app</title>');
  });

  it("shows a failed build's error instead of the app", async () => {
    const building = Promise.reject(new Error('the Web UI build failed (exit 1): boom <b>'));
    building.catch(() => undefined);
    const ui = await start(building);
    await new Promise((r) => setTimeout(r, 20));
    const page = await fetch(`${ui.url}/`);
    expect(page.status).to.equal(500);
    const html = await page.text();
    expect(html).to.include('could not be built');
    expect(html).to.include('boom &#60;b&#62;');
    expect(html).to.not.include('http-equiv="refresh"');
  });

  it('serves "View Raw History" from the HTTP API, and turns Update on in the settings', async () => {
    fs.writeFileSync(path.join(dir, 'index.html'), '<!doctype html>');
    const ui = await start();
    await fetch(`${ui.url}/namespaces/default/workflows/a%2Fb/run-1/history.json`);
    expect(seen.at(-1)).to.equal('/api/v1/namespaces/default/workflows/a%2Fb/history?execution.runId=run-1&maximumPageSize=100000&pretty=true');
    expect(rawHistoryPath('/api/v1/namespaces/default/workflows/a%2Fb/run/run-1/history.json')).to.equal(seen.at(-1));
    expect(rawHistoryPath('/namespaces/default/workflows/a/run-1/history')).to.equal(undefined);
    expect(uiSettings('default', '2.38.0').WorkflowUpdateDisabled).to.equal(false);
  });
});
