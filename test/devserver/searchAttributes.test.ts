/**
 * Custom search attribute registration as the real server does it (OperatorService
 * AddSearchAttributes / ListSearchAttributes / RemoveSearchAttributes, `temporal server start-dev
 * --search-attribute KEY=Type`) and the typing of values sent without `type` metadata (the real
 * server's searchattribute ApplyTypeMap): a registered Datetime reads back as a Date.
 */
import { expect } from 'chai';
import { temporal } from '@temporalio/proto';
import { startDevServer, DevServer } from '../../devserver';
import { parseArgs } from '../../devserver/bin';
import { connect, uniqueQueue } from './helpers';

const IVT = temporal.api.enums.v1.IndexedValueType;

describe('devserver search attribute registration', function () {
  this.timeout(30_000);
  let server: DevServer;
  let conn: Awaited<ReturnType<typeof connect>>;

  before(async () => {
    server = await startDevServer({ searchAttributes: { OrderDate: IVT.INDEXED_VALUE_TYPE_DATETIME, OrderTag: IVT.INDEXED_VALUE_TYPE_KEYWORD } });
    conn = await connect(server.address);
  });
  after(async () => {
    await conn?.close();
    await server?.stop();
  });

  it('parses --search-attribute KEY=Type in both CLI forms and refuses an unknown type', () => {
    expect(parseArgs(['--port', '7233', '--search-attribute', 'OrderDate=Datetime', '--search-attribute', 'Tags=KeywordList']).searchAttributes).to.deep.equal({
      OrderDate: IVT.INDEXED_VALUE_TYPE_DATETIME,
      Tags: IVT.INDEXED_VALUE_TYPE_KEYWORD_LIST,
    });
    const test = parseArgs(['7300', '--search-attribute', 'N=Int', '--unknown']);
    expect(test.testServer).to.equal(true);
    expect(test.searchAttributes).to.deep.equal({ N: IVT.INDEXED_VALUE_TYPE_INT });
    expect(() => parseArgs(['--search-attribute', 'X=Date'])).to.throw(/KEY=Type/);
  });

  it('types untyped values of registered attributes: a Datetime reads back as a Date, a Keyword as typed', async () => {
    const json = (v: unknown) => ({ metadata: { encoding: Buffer.from('json/plain') }, data: Buffer.from(JSON.stringify(v)) });
    const workflowId = uniqueQueue('typed');
    await conn.client.workflowService.startWorkflowExecution({
      namespace: 'default',
      workflowId,
      workflowType: { name: 'raw' },
      taskQueue: { name: uniqueQueue('typed') },
      requestId: uniqueQueue('req'),
      searchAttributes: { indexedFields: { OrderDate: json('2026-01-02T03:04:05Z'), OrderTag: json('gold') } },
    });
    const d = await conn.client.workflow.getHandle(workflowId).describe();
    expect(d.searchAttributes.OrderDate?.[0]).to.be.instanceOf(Date);
    expect((d.searchAttributes.OrderDate?.[0] as Date).toISOString()).to.equal('2026-01-02T03:04:05.000Z');
    const pairs = d.typedSearchAttributes.getAll().map((p) => [p.key.name, p.key.type]);
    expect(pairs).to.deep.include.members([
      ['OrderDate', 'DATETIME'],
      ['OrderTag', 'KEYWORD'],
    ]);
    await conn.client.workflow.getHandle(workflowId).terminate();
  });

  it('adds, lists and removes custom attributes with the real server’s errors', async () => {
    const ops = conn.connection.operatorService;
    await ops.addSearchAttributes({ namespace: 'default', searchAttributes: { Region: IVT.INDEXED_VALUE_TYPE_KEYWORD } });
    await ops.addSearchAttributes({ namespace: 'default', searchAttributes: { Region: IVT.INDEXED_VALUE_TYPE_KEYWORD } }); // same type: no-op
    const listed = await ops.listSearchAttributes({ namespace: 'default' });
    expect(listed.customAttributes).to.include({ Region: IVT.INDEXED_VALUE_TYPE_KEYWORD, OrderDate: IVT.INDEXED_VALUE_TYPE_DATETIME });
    expect(listed.systemAttributes).to.include({ WorkflowId: IVT.INDEXED_VALUE_TYPE_KEYWORD });
    const code = (p: Promise<unknown>) => p.then(() => 0, (e: { code?: number }) => e.code);
    expect(await code(ops.addSearchAttributes({ namespace: 'default', searchAttributes: { Region: IVT.INDEXED_VALUE_TYPE_INT } }))).to.equal(6); // ALREADY_EXISTS
    expect(await code(ops.addSearchAttributes({ namespace: 'default', searchAttributes: { WorkflowId: IVT.INDEXED_VALUE_TYPE_KEYWORD } }))).to.equal(3);
    await ops.removeSearchAttributes({ namespace: 'default', searchAttributes: ['Region'] });
    expect((await ops.listSearchAttributes({ namespace: 'default' })).customAttributes).to.not.have.property('Region');
    expect(await code(ops.removeSearchAttributes({ namespace: 'default', searchAttributes: ['Region'] }))).to.equal(5); // NOT_FOUND
  });
});
