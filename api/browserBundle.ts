/**
 * One way the API bundles a browser script of its own (the widget, the console): esbuild, minified, one IIFE for
 * ES2020, no legal comments, built in memory once per process the first time it is asked for; a failed build is
 * tried again on the next ask.
 */

/**
 * A memoized bundle of `entry` (an absolute path to a browser TypeScript file).
 * @returns a function answering the bundled code; it throws (rejects) when esbuild fails on the sources
 */
export function browserBundle(entry: string): () => Promise<string> {
  let bundle: Promise<string> | undefined;
  return () => {
    bundle ??= (async () => {
      const esbuild = await import('esbuild');
      const out = await esbuild.build({ entryPoints: [entry], bundle: true, minify: true, write: false, format: 'iife', target: 'es2020', legalComments: 'none' });
      return out.outputFiles[0].text;
    })();
    bundle.catch(() => (bundle = undefined));
    return bundle;
  };
}
