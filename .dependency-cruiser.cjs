/**
 * The dependency rule (docs/architecture.md "Layers"; DESIGN.md "Layout"), checked by dependency-cruiser
 * in `npm test` (test/architecture.test.ts). Layers, top to bottom:
 *   entry points (main.ts, worker.ts, cli.ts, cluster.ts, runtime.ts, telemetry.ts, bootstrap.ts, secrets.ts, api/server.ts, scripts/)
 *   → api/ → activities/ and workflows/ → services/ → events/ → providers/ → db/ → domain/ → schemas/
 * config.ts and temporal.config.ts are read by every layer below the entry points; metrics.ts (the Prometheus
 * instruments, a leaf) is recorded into by every layer but workflows/, domain/ and schemas/. A layer imports only
 * layers below it; workflows/ imports only domain/ and activity types (Temporal's sandbox runs it).
 */
const LAYERS = ['api', 'activities', 'workflows', 'services', 'events', 'providers', 'db', 'domain', 'schemas'];
/** What each layer may import with a value import, besides itself. */
const BELOW = {
  api: ['activities', 'workflows', 'services', 'events', 'providers', 'db', 'domain', 'schemas', 'config', 'temporal.config', 'metrics'],
  activities: ['services', 'events', 'providers', 'db', 'domain', 'schemas', 'config', 'temporal.config', 'metrics'],
  workflows: ['domain', 'schemas'],
  services: ['events', 'providers', 'db', 'domain', 'schemas', 'config', 'temporal.config', 'metrics'],
  events: ['providers', 'db', 'domain', 'schemas', 'config', 'temporal.config', 'metrics'],
  providers: ['db', 'domain', 'schemas', 'config', 'metrics'],
  db: ['domain', 'schemas', 'config', 'metrics'],
  domain: ['schemas'],
  schemas: [],
};
/**
 * Type-only imports a layer may make of a layer beside or above it: a workflow proxies its activities by their
 * types (proxyActivities<typeof activities>), and workflows/registry.ts registers the workflow functions with
 * temporal.config.ts (declaration merging), so nothing below the workflows imports their types.
 */
const TYPES_ABOVE = {
  workflows: ['activities', 'temporal.config'],
};
const ENTRY = '^(main|worker|cli|cluster|runtime|telemetry|bootstrap|secrets)\\.ts$|^api/server\\.ts$|^scripts/';
const pathOf = (name) => (name === 'config' ? '^config\\.ts$' : name === 'temporal.config' ? '^temporal\\.config\\.ts$' : name === 'metrics' ? '^metrics\\.ts$' : `^${name}/`);
const OUR_CODE = ['^(api|activities|workflows|services|events|providers|db|domain|schemas|devserver|scripts|widget)/', '^[^/]+\\.ts$'];

const layerRules = LAYERS.flatMap((layer) => {
  const allowed = [layer, ...BELOW[layer]].map(pathOf);
  const rules = [
    {
      name: `layer-${layer}`,
      comment: `${layer}/ imports only ${BELOW[layer].join(', ') || 'itself'}${TYPES_ABOVE[layer] ? ` (and types of ${TYPES_ABOVE[layer].join(', ')})` : ''}`,
      severity: 'error',
      from: { path: pathOf(layer), pathNot: ENTRY },
      to: { path: OUR_CODE, pathNot: [...allowed, ...(TYPES_ABOVE[layer] ?? []).map(pathOf)] },
    },
  ];
  if (TYPES_ABOVE[layer])
    rules.push({
      name: `layer-${layer}-types`,
      comment: `${layer}/ imports only the types of ${TYPES_ABOVE[layer].join(', ')}`,
      severity: 'error',
      from: { path: pathOf(layer), pathNot: ENTRY },
      to: { path: TYPES_ABOVE[layer].map(pathOf), dependencyTypesNot: ['type-only'] },
    });
  return rules;
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'config-is-a-leaf',
      comment: 'config.ts, temporal.config.ts and metrics.ts import no layer, not even its types',
      severity: 'error',
      from: { path: ['^config\\.ts$', '^temporal\\.config\\.ts$', '^metrics\\.ts$'] },
      to: { path: OUR_CODE, pathNot: ['^config\\.ts$'] },
    },
    {
      name: 'no-cycle-across-folders',
      comment: 'an import cycle stays inside one top-level folder',
      severity: 'error',
      from: { path: '^([^/]+)/' },
      // Type-only edges count too: a cycle through types is a picture without a top and a bottom for the reader,
      // even though it vanishes at compile time.
      to: { circular: true, via: { pathNot: '^$1/' } },
    },
    {
      name: 'entry-points-on-top',
      comment: 'only entry points import the entry points',
      severity: 'error',
      from: { pathNot: ENTRY },
      to: { path: ENTRY },
    },
    {
      name: 'domain-is-pure',
      comment: 'domain/ loads no web framework, database driver or Temporal client/worker',
      severity: 'error',
      from: { path: '^domain/' },
      to: { path: 'node_modules/(koa|koa-body|@koa/|knex|pg|@temporalio/(client|worker|activity|workflow))(/|$)' },
    },
    {
      name: 'workflow-sandbox',
      comment: 'workflow code runs in Temporal\'s deterministic sandbox: only @temporalio/workflow and @temporalio/common',
      severity: 'error',
      from: { path: '^workflows/' },
      to: { dependencyTypes: ['npm', 'npm-dev', 'core'], dependencyTypesNot: ['type-only'], pathNot: 'node_modules/@temporalio/(workflow|common)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|test|bench|dist|ui|\\.data)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
