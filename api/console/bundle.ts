/**
 * The console's browser script: `console/src/console.ts` bundled once by esbuild (as the widget is,
 * api/widgetAsset.ts) into one IIFE served from this origin, so the console's strict CSP needs no inline script.
 */
import path from 'node:path';
import { browserBundle } from '../browserBundle';

/** The bundled script. @throws when esbuild fails (a build error in console/src) */
export const consoleBundle: () => Promise<string> = browserBundle(path.join(__dirname, '..', '..', 'console', 'src', 'console.ts'));
