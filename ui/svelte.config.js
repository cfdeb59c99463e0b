// SvelteKit as a static single-page app (adapter-static with a fallback page): the dev server's
// UI listener (devserver/http/ui.ts) serves build/ and answers /api/v1 itself.
import adapter from '@sveltejs/adapter-static';
import { vitePreprocess } from '@sveltejs/vite-plugin-svelte';

export default {
  preprocess: vitePreprocess(),
  kit: {
    adapter: adapter({ pages: 'build', assets: 'build', fallback: 'index.html', strict: false }),
  },
};
