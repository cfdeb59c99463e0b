/**
 * The console's browser script: `console/src/console.ts` bundled once by esbuild (as the widget is,
 * api/widgetAsset.ts) into one IIFE served from this origin, so the console's strict CSP needs no inline script.
 */
import path from 'node:path';

let bundle: Promise<string> | undefined;

/** The bundled script. @throws when esbuild fails (a build error in console/src) */
export function consoleBundle(): Promise<string> {
  bundle ??= (async () => {
    const esbuild = await import('esbuild');
    const out = await esbuild.build({
      entryPoints: [path.join(__dirname, '..', '..', 'console', 'src', 'console.ts')],
      bundle: true,
      minify: true,
      write: false,
      format: 'iife',
      target: 'es2020',
      legalComments: 'none',
    });
    return out.outputFiles[0].text;
  })();
  bundle.catch(() => (bundle = undefined));
  return bundle;
}
