// The package's own Tailwind preset (theme colours, text styles); content includes the package's
// compiled components so their classes are generated.
import preset from '../node_modules/@temporalio/ui/dist/theme/preset.js';
import defaultTheme from 'tailwindcss/defaultTheme.js';

export default {
  presets: [preset],
  // The official app's fonts (its tailwind.config.ts; the preset carries none): without them the
  // pages fall back to a wider system font and the workflow table outgrows a 1280 px window.
  theme: {
    fontFamily: {
      sans: ['Inter Variable', ...defaultTheme.fontFamily.sans],
      primary: ['Inter Variable', ...defaultTheme.fontFamily.sans],
      mono: ['Noto Sans Mono', ...defaultTheme.fontFamily.mono],
    },
  },
  content: ['./src/**/*.{html,js,svelte,ts}', '../node_modules/@temporalio/ui/dist/**/*.{svelte,js}'],
};
