import { expect } from 'chai';
import pg from 'pg';
import { createTestDatabase } from './helpers/postgres';
describe('smoke', () => { it('creates a fresh database', async () => { const url = await createTestDatabase('smoke'); const c = new pg.Client(url); await c.connect(); const r = await c.query('select current_database() as d'); await c.end(); expect(r.rows[0].d).to.match(/^t_smoke_/); }); });
