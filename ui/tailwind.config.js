// The package's own Tailwind preset (theme colours, text styles); content includes the package's
// compiled components so their classes are generated.
import preset from '../node_modules/@temporalio/ui/dist/theme/preset.js';

export default {
  presets: [preset],
  content: ['./src/**/*.{html,js,svelte,ts}', '../node_modules/@temporalio/ui/dist/**/*.{svelte,js}'],
};
