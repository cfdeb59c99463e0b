import { expect } from 'chai';
import {
  VisibilityQueryError,
  VisibilityRecord,
  compareForOrder,
  matchesVisibilityQuery,
  parseVisibilityQuery,
} from '../../devserver/visibility/query';

function rec(over: Partial<VisibilityRecord> = {}): VisibilityRecord {
  return {
    namespace: 'default',
    workflowId: 'order-1234',
    runId: 'run-a',
    workflowType: 'main.OrderWorkflow',
    taskQueue: 'orders',
    status: 'Running',
    startTime: new Date('2024-01-10T10:00:00Z'),
    executionTime: new Date('2024-01-10T10:00:00Z'),
    closeTime: null,
    searchAttributes: {},
    ...over,
  };
}

function m(query: string, r: VisibilityRecord = rec()): boolean {
  return matchesVisibilityQuery(parseVisibilityQuery(query), r);
}

/** Asserts that `r` matches every query in `yes` and none in `no`, naming the query that fails. */
function expectMatches(r: VisibilityRecord, cases: { yes: string[]; no: string[] }): void {
  for (const q of cases.yes) expect(m(q, r), q).to.equal(true);
  for (const q of cases.no) expect(m(q, r), q).to.equal(false);
}

function parseError(query: string): VisibilityQueryError {
  try {
    parseVisibilityQuery(query);
  } catch (e) {
    expect(e).to.be.instanceOf(VisibilityQueryError);
    return e as VisibilityQueryError;
  }
  throw new Error(`expected ${JSON.stringify(query)} to fail to parse`);
}

describe('devserver visibility list filter', () => {
  describe('empty and match-all', () => {
    it('treats empty and whitespace-only queries as match-all', () => {
      for (const q of ['', '   ', '\n\t ']) {
        const parsed = parseVisibilityQuery(q);
        expect(parsed).to.deep.equal({ filter: null, orderBy: [] });
        expect(matchesVisibilityQuery(parsed, rec())).to.equal(true);
      }
    });

    it('accepts a query that is only an ORDER BY clause', () => {
      const q = parseVisibilityQuery('ORDER BY WorkflowId');
      expect(q.filter).to.equal(null);
      expect(q.orderBy).to.deep.equal([{ attribute: 'WorkflowId', direction: 'ASC' }]);
      expect(matchesVisibilityQuery(q, rec())).to.equal(true);
    });
  });

  describe('comparison operators', () => {
    it('= and != on Keyword system attributes', () => {
      expectMatches(rec(), {
        yes: ["WorkflowId = 'order-1234'", "WorkflowId != 'order-9'", "WorkflowType = 'main.OrderWorkflow'", "RunId = 'run-a'", "TaskQueue = 'orders'"],
        no: ["WorkflowId = 'order-9'", "WorkflowId != 'order-1234'", "WorkflowId <> 'order-1234'", "TaskQueue = 'other'"],
      });
    });

    it('>, >=, <, <= on strings compare lexicographically', () => {
      expectMatches(rec(), {
        yes: ["WorkflowId > 'order-1'", "WorkflowId >= 'order-1234'", "WorkflowId <= 'order-1234'", "WorkflowId < 'p'"],
        no: ["WorkflowId < 'order-1234'"],
      });
    });

    it('numbers (Int / Double) compare numerically', () => {
      const r = rec({ searchAttributes: { Priority: 5, Score: 2.5 } });
      expectMatches(r, {
        yes: ['Priority = 5', 'Priority > 4', 'Priority >= 5', 'Priority <= 10', 'Priority > -1', 'Score > 2.25 AND Score < 2.75', 'Score = 2.5e0'],
        no: ['Priority != 5', 'Priority < 5'],
      });
    });

    it('booleans', () => {
      const r = rec({ searchAttributes: { IsVip: true } });
      expectMatches(r, {
        yes: ['IsVip = true', 'IsVip = TRUE', 'IsVip != false'],
        no: ['IsVip = false'],
      });
    });

    it('mismatched types never match', () => {
      const r = rec({ searchAttributes: { Priority: 5, Name: 'x' } });
      expectMatches(r, {
        yes: [],
        no: ['Priority = true', 'Priority != true', 'Name = 5'],
      });
    });
  });

  describe('ExecutionStatus', () => {
    it('matches status names with = / != / IN / NOT IN', () => {
      const done = rec({ status: 'Completed', closeTime: new Date('2024-01-10T11:00:00Z') });
      expect(m("ExecutionStatus = 'Running'")).to.equal(true);
      expect(m("ExecutionStatus = 'Running'", done)).to.equal(false);
      expect(m('ExecutionStatus != "Running"', done)).to.equal(true);
      expect(m("ExecutionStatus IN ('Failed', 'Completed')", done)).to.equal(true);
      expect(m("ExecutionStatus NOT IN ('Failed', 'Completed')", done)).to.equal(false);
      for (const s of ['Failed', 'Canceled', 'Terminated', 'ContinuedAsNew', 'TimedOut'] as const) {
        expect(m(`ExecutionStatus = '${s}'`, rec({ status: s }))).to.equal(true);
      }
    });

    it('canonicalises status values case-insensitively', () => {
      const q = parseVisibilityQuery("ExecutionStatus = 'running'");
      expect(q.filter).to.deep.equal({ kind: 'compare', attribute: 'ExecutionStatus', op: '=', value: 'Running' });
    });

    it('rejects unknown status values and unsupported operators', () => {
      expect(parseError("ExecutionStatus = 'Done'").message).to.match(/invalid ExecutionStatus value "Done".*Running/);
      expect(parseError("ExecutionStatus > 'Running'").message).to.match(/operator > is not supported on ExecutionStatus/);
      expect(parseError("ExecutionStatus STARTS_WITH 'Run'").message).to.match(/STARTS_WITH is not supported/);
    });
  });

  describe('IN / NOT IN', () => {
    it('matches any listed value', () => {
      expectMatches(rec(), {
        yes: ["WorkflowId IN ('a', 'order-1234', 'b')", "WorkflowId NOT IN ('a', 'b')"],
        no: ["WorkflowId IN ('a')", "WorkflowId not in ('order-1234')"],
      });
      expect(m('Priority IN (1, 2, 3)', rec({ searchAttributes: { Priority: 2 } }))).to.equal(true);
    });
  });

  describe('BETWEEN', () => {
    it('is inclusive on both ends', () => {
      const r = rec({ searchAttributes: { Priority: 5 } });
      expectMatches(r, {
        yes: ['Priority BETWEEN 5 AND 10', 'Priority BETWEEN 1 AND 5', 'Priority NOT BETWEEN 6 AND 10'],
        no: ['Priority BETWEEN 6 AND 10'],
      });
    });

    it('supports the documented suffix idiom on Keyword attributes', () => {
      const q = 'WorkflowId BETWEEN "order-" AND "order-~"';
      expect(m(q, rec({ workflowId: 'order-' }))).to.equal(true);
      expect(m(q, rec({ workflowId: 'order-abracadabra' }))).to.equal(true);
      expect(m(q, rec({ workflowId: 'order-~~' }))).to.equal(false);
      expect(m(q, rec({ workflowId: 'invoice-1' }))).to.equal(false);
    });

    it('does not swallow a following AND', () => {
      const q = "WorkflowId BETWEEN 'a' AND 'z' AND TaskQueue = 'nope'";
      expect(m(q)).to.equal(false);
      expect(m("WorkflowId BETWEEN 'a' AND 'z' AND TaskQueue = 'orders'")).to.equal(true);
    });
  });

  describe('STARTS_WITH', () => {
    it('matches prefixes', () => {
      expectMatches(rec(), {
        yes: ['WorkflowId STARTS_WITH "order-"', "WorkflowType STARTS_WITH 'main.'", "WorkflowId NOT STARTS_WITH 'invoice-'", "WorkflowId STARTS_WITH ''"],
        no: ["WorkflowId starts_with 'invoice-'"],
      });
    });

    it('requires a string prefix and a non-datetime attribute', () => {
      expect(parseError('WorkflowId STARTS_WITH 5').message).to.match(/STARTS_WITH requires a quoted string prefix but found '5' at position 24/);
      expect(parseError("StartTime STARTS_WITH '2024'").message).to.match(/STARTS_WITH is only supported on Keyword/);
    });
  });

  describe('IS NULL / IS NOT NULL and missing attributes', () => {
    it('treats missing custom attributes as NULL', () => {
      expect(m('CustomerId IS NULL')).to.equal(true);
      expect(m('CustomerId IS NOT NULL')).to.equal(false);
      expect(m("CustomerId is not null", rec({ searchAttributes: { CustomerId: 'c1' } }))).to.equal(true);
      expect(m('CustomerId IS NULL', rec({ searchAttributes: { CustomerId: null } }))).to.equal(true);
    });

    it('makes every comparison on a missing attribute false', () => {
      for (const q of [
        "CustomerId = 'x'",
        "CustomerId != 'x'",
        "CustomerId > 'x'",
        "CustomerId < 'x'",
        "CustomerId IN ('x')",
        "CustomerId NOT IN ('x')",
        "CustomerId BETWEEN 'a' AND 'z'",
        "CustomerId NOT BETWEEN 'a' AND 'z'",
        "CustomerId STARTS_WITH 'x'",
        "CustomerId NOT STARTS_WITH 'x'",
      ]) {
        expect(m(q), q).to.equal(false);
      }
    });

    it('treats CloseTime of an open workflow as NULL', () => {
      expectMatches(rec(), {
        yes: ['CloseTime IS NULL'],
        no: ["CloseTime > '2000-01-01T00:00:00Z'", "CloseTime < '2100-01-01T00:00:00Z'"],
      });
      const closed = rec({ status: 'Completed', closeTime: new Date('2024-01-10T11:00:00Z') });
      expect(m('CloseTime IS NOT NULL', closed)).to.equal(true);
      expect(m("CloseTime > '2024-01-10T10:30:00Z'", closed)).to.equal(true);
    });
  });

  describe('datetimes', () => {
    it('compares system datetimes as instants across offsets', () => {
      // 2024-01-10T10:00:00Z == 2024-01-10T02:00:00-08:00
      expectMatches(rec(), {
        yes: ["StartTime = '2024-01-10T02:00:00-08:00'", "StartTime >= '2024-01-10T12:00:00+02:00'", "StartTime < '2024-01-10T10:00:01Z'", "ExecutionTime BETWEEN '2024-01-10T00:00:00Z' AND '2024-01-11T00:00:00Z'"],
        no: ["StartTime > '2024-01-10T02:00:00.001-08:00'", "StartTime < '2024-01-10T10:00:00.000000001Z'", "ExecutionTime between '2024-01-11T00:00:00Z' and '2024-01-12T00:00:00Z'"],
      });
    });

    it('runs the documented example', () => {
      const q =
        'WorkflowType = "main.YourWorkflowDefinition" and ExecutionStatus != "Running" and (StartTime > "2021-06-07T16:46:34.236-08:00" or CloseTime > "2021-06-07T16:46:34-08:00")';
      const base = {
        workflowType: 'main.YourWorkflowDefinition',
        status: 'Completed' as const,
        startTime: new Date('2021-06-01T00:00:00Z'),
        executionTime: new Date('2021-06-01T00:00:00Z'),
      };
      expect(m(q, rec({ ...base, closeTime: new Date('2021-06-09T00:00:00Z') }))).to.equal(true);
      expect(m(q, rec({ ...base, closeTime: new Date('2021-06-02T00:00:00Z') }))).to.equal(false);
      expect(m(q, rec({ ...base, status: 'Running', startTime: new Date('2021-06-09T00:00:00Z') }))).to.equal(false);
    });

    it('compares custom Datetime attributes stored as Date or ISO string', () => {
      const asDate = rec({ searchAttributes: { DueAt: new Date('2024-03-01T12:00:00Z') } });
      const asString = rec({ searchAttributes: { DueAt: '2024-03-01T12:00:00.000Z' } });
      for (const r of [asDate, asString]) {
        expectMatches(r, {
          yes: ["DueAt = '2024-03-01T13:00:00+01:00'", "DueAt > '2024-03-01T11:59:59Z'", "DueAt BETWEEN '2024-03-01T00:00:00Z' AND '2024-03-02T00:00:00Z'"],
          no: ["DueAt < '2024-03-01T11:59:59Z'"],
        });
      }
    });

    it('rejects non-RFC 3339 values for system datetime attributes', () => {
      expect(parseError("StartTime > 'yesterday'").message).to.match(
        /StartTime at position 1 is a Datetime attribute; value "yesterday" is not an RFC 3339 timestamp/,
      );
      expect(parseError('StartTime > 12345').message).to.match(/not an RFC 3339 timestamp/);
      expect(parseError("CloseTime < '2024-02-30T00:00:00Z'").message).to.match(/not an RFC 3339/);
    });
  });

  describe('KeywordList', () => {
    const r = rec({ searchAttributes: { Tags: ['blue', 'green'] } });
    it('= / != test membership', () => {
      expectMatches(r, {
        yes: ["Tags = 'blue'", "Tags != 'red'"],
        no: ["Tags = 'red'", "Tags != 'green'"],
      });
    });
    it('IN / NOT IN / STARTS_WITH use any element', () => {
      expectMatches(r, {
        yes: ["Tags IN ('red', 'green')", "Tags NOT IN ('red', 'yellow')", "Tags STARTS_WITH 'gr'"],
        no: ["Tags NOT IN ('red', 'green')", "Tags STARTS_WITH 're'"],
      });
    });
    it('an empty list is NULL', () => {
      const empty = rec({ searchAttributes: { Tags: [] } });
      expect(m('Tags IS NULL', empty)).to.equal(true);
      expect(m("Tags != 'red'", empty)).to.equal(false);
    });
  });

  describe('AND / OR precedence and parentheses', () => {
    it('binds AND tighter than OR', () => {
      // false AND false OR true  => (false AND false) OR true => true
      expect(m("WorkflowId = 'x' AND TaskQueue = 'x' OR RunId = 'run-a'")).to.equal(true);
      // true OR false AND false => true OR (false AND false) => true
      expect(m("RunId = 'run-a' OR WorkflowId = 'x' AND TaskQueue = 'x'")).to.equal(true);
      const q = parseVisibilityQuery("RunId = 'a' OR WorkflowId = 'b' AND TaskQueue = 'c'");
      expect(q.filter!.kind).to.equal('or');
    });

    it('lets parentheses override precedence', () => {
      expectMatches(rec(), {
        yes: ["(RunId = 'run-a' OR WorkflowId = 'x') AND TaskQueue = 'orders'", "((WorkflowId = 'order-1234'))", "WorkflowId = 'nope' OR (TaskQueue = 'orders' AND (RunId = 'run-a' OR RunId = 'run-b'))"],
        no: ["(RunId = 'run-a' OR WorkflowId = 'x') AND TaskQueue = 'x'"],
      });
    });

    it('accepts keywords in any case', () => {
      expect(m("WorkflowId = 'x' or RunId = 'run-a' And TaskQueue = 'orders'")).to.equal(true);
      expect(m("workflowid = 'order-1234'")).to.equal(false); // attribute names are case-sensitive
    });
  });

  describe('quoting', () => {
    it('accepts single and double quoted strings with escapes', () => {
      expect(m(`WorkflowId = "order-1234"`)).to.equal(true);
      expect(m(`WorkflowId = 'it''s'`, rec({ workflowId: "it's" }))).to.equal(true);
      expect(m(`WorkflowId = 'it\\'s'`, rec({ workflowId: "it's" }))).to.equal(true);
      expect(m(`WorkflowId = "say \\"hi\\""`, rec({ workflowId: 'say "hi"' }))).to.equal(true);
      expect(m(`WorkflowId = "a'b"`, rec({ workflowId: "a'b" }))).to.equal(true);
      expect(m(`WorkflowId = 'AND OR ( )'`, rec({ workflowId: 'AND OR ( )' }))).to.equal(true);
    });

    it('accepts backtick-quoted attribute names', () => {
      const r = rec({ searchAttributes: { 'customer-id': 'c1', Order: 3 } });
      expectMatches(r, {
        yes: ["`customer-id` = 'c1'", "`WorkflowId` = 'order-1234'", '`Order` = 3'],
        no: [],
      });
      expect(parseVisibilityQuery('ORDER BY `Order` DESC').orderBy).to.deep.equal([{ attribute: 'Order', direction: 'DESC' }]);
    });
  });

  describe('ORDER BY and default ordering', () => {
    const a = rec({ runId: 'a', workflowId: 'w3', startTime: new Date('2024-01-01T00:00:00Z'), executionTime: new Date('2024-01-01T00:00:00Z'), closeTime: new Date('2024-01-05T00:00:00Z'), searchAttributes: { Priority: 2 } });
    const b = rec({ runId: 'b', workflowId: 'w1', startTime: new Date('2024-01-03T00:00:00Z'), executionTime: new Date('2024-01-03T00:00:00Z'), closeTime: null, searchAttributes: { Priority: 1 } });
    const c = rec({ runId: 'c', workflowId: 'w2', startTime: new Date('2024-01-02T00:00:00Z'), executionTime: new Date('2024-01-02T00:00:00Z'), closeTime: new Date('2024-01-04T00:00:00Z'), searchAttributes: {} });
    const d = rec({ runId: 'd', workflowId: 'w2', startTime: new Date('2024-01-02T00:00:00Z'), executionTime: new Date('2024-01-02T00:00:00Z'), closeTime: new Date('2024-01-06T00:00:00Z'), searchAttributes: { Priority: 2 } });
    const ids = (q: string) => [d, c, b, a].sort(compareForOrder(parseVisibilityQuery(q))).map((r) => r.runId);

    it('defaults to StartTime DESC with RunId as tie-breaker', () => {
      expect(ids('')).to.deep.equal(['b', 'c', 'd', 'a']);
      expect(ids("TaskQueue = 'orders'")).to.deep.equal(['b', 'c', 'd', 'a']);
    });

    it('orders by one key ASC (default) or DESC', () => {
      expect(ids('ORDER BY StartTime')).to.deep.equal(['a', 'c', 'd', 'b']);
      expect(ids('order by StartTime asc')).to.deep.equal(['a', 'c', 'd', 'b']);
      expect(ids('ORDER BY WorkflowId DESC')).to.deep.equal(['a', 'c', 'd', 'b']);
      expect(ids('ORDER BY ExecutionTime DESC')).to.deep.equal(['b', 'c', 'd', 'a']);
      expect(ids('ORDER BY ExecutionTime ASC, RunId DESC')).to.deep.equal(['a', 'd', 'c', 'b']);
    });

    it('sorts NULL CloseTime as largest (first for DESC, last for ASC)', () => {
      expect(ids('ORDER BY CloseTime DESC')).to.deep.equal(['b', 'd', 'a', 'c']);
      expect(ids('ORDER BY CloseTime ASC')).to.deep.equal(['c', 'a', 'd', 'b']);
    });

    it('supports comma lists and custom attributes', () => {
      expect(ids('ORDER BY Priority DESC, WorkflowId ASC')).to.deep.equal(['c', 'd', 'a', 'b']);
      expect(ids("ExecutionStatus = 'Running' ORDER BY WorkflowId, CloseTime DESC")).to.deep.equal(['b', 'd', 'c', 'a']);
      expect(parseVisibilityQuery('ORDER BY Priority DESC, WorkflowId').orderBy).to.deep.equal([
        { attribute: 'Priority', direction: 'DESC' },
        { attribute: 'WorkflowId', direction: 'ASC' },
      ]);
    });
  });

  describe('errors', () => {
    it('is an Error subclass with a position and an "invalid query" message', () => {
      const e = parseError("WorkflowId = 'a' AND");
      expect(e).to.be.instanceOf(Error);
      expect(e.name).to.equal('VisibilityQueryError');
      expect(e.message).to.match(/^invalid query: /);
      expect(e.message).to.match(/found end of query/);
    });

    it('names unexpected characters and tokens with their positions', () => {
      const e = parseError("WorkflowId = 'a' # x");
      expect(e.message).to.contain("unexpected character '#' at position 18");
      expect(e.position).to.equal(18);
      expect(parseError("WorkflowId = 'a' TaskQueue = 'b'").message).to.contain(
        "unexpected token 'TaskQueue' at position 18; expected AND, OR, ORDER BY or end of query",
      );
      expect(parseError("WorkflowId LIKE 'a%'").message).to.contain("found 'LIKE' at position 12");
      expect(parseError('WorkflowId =').message).to.contain('expected a value after = but found end of query');
    });

    it('reports unterminated strings, backticks and parentheses', () => {
      expect(parseError("WorkflowId = 'abc").message).to.contain('unterminated string literal starting at position 14');
      expect(parseError('`abc = 1').message).to.contain('unterminated backtick-quoted attribute name starting at position 1');
      expect(parseError("(WorkflowId = 'a'").message).to.contain("expected ')' to close '(' at position 1 but found end of query");
      expect(parseError("WorkflowId = 'a')").message).to.contain("unbalanced ')' at position 17");
      expect(parseError('()').message).to.contain('empty parentheses at position 1');
    });

    it('rejects unsupported constructs', () => {
      expect(parseError("NOT WorkflowId = 'a'").message).to.contain('unsupported operator NOT at position 1');
      expect(parseError('WorkflowId = NULL').message).to.contain('use IS NULL or IS NOT NULL');
      expect(parseError('WorkflowId = RunId').message).to.contain('comparing two attributes is not supported');
      expect(parseError('WorkflowId IN ()').message).to.contain('empty IN list');
      expect(parseError("WorkflowId IN ('a' 'b')").message).to.contain("expected ',' or ')' in IN list but found ''b'' at position 20");
      expect(parseError("WorkflowId BETWEEN 'a' OR 'b'").message).to.contain('expected AND between the two BETWEEN bounds');
      expect(parseError("WorkflowId IS 'x'").message).to.contain('expected NULL after IS');
      expect(parseError("WorkflowId NOT = 'x'").message).to.contain('expected IN, BETWEEN or STARTS_WITH after NOT');
      expect(parseError("AND = 'x'").message).to.contain("found keyword 'AND' at position 1");
      expect(parseError("ORDER WorkflowId").message).to.contain('expected BY after ORDER');
      expect(parseError('ORDER BY').message).to.contain('expected a search attribute name in ORDER BY but found end of query');
      expect(parseError("WorkflowId = 'a' LIMIT 5").message).to.contain("unexpected token 'LIMIT'");
      expect(parseError('WorkflowId = 5').message).to.contain('is a Keyword attribute and must be compared with a quoted string');
    });
  });
});
