import { sveltekit } from '@sveltejs/kit/vite';

// VITE_API '' = the API is the page's own origin (the UI listener proxies /api/v1 to the HTTP API).
export default {
  plugins: [sveltekit()],
  define: {
    'import.meta.env.VITE_API': JSON.stringify(''),
    'import.meta.env.VITE_TEMPORAL_UI_BUILD_TARGET': JSON.stringify('local'),
    'import.meta.env.VITE_DARK_MODE': JSON.stringify(''),
  },
  build: { chunkSizeWarningLimit: 10000 },
  logLevel: 'warn',
};
