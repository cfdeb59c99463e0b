// Root load, as the official app's root and (app) layouts: i18n, then the settings (our own
// /api/v1/settings answer), the cluster and the namespace list the package's stores read.
import i18next from 'i18next';
import { i18nNamespaces } from '@temporalio/ui/i18n/index';
import resources from '@temporalio/ui/i18n/locales/index';
import { fetchSettings } from '@temporalio/ui/services/settings-service';
import { fetchCluster } from '@temporalio/ui/services/cluster-service';
import { fetchNamespaces } from '@temporalio/ui/services/namespaces-service';
import '../app.css';

export const ssr = false;
export const prerender = false;

export async function load({ fetch }) {
  if (!i18next.isInitialized) {
    await i18next.init({ lng: 'en', fallbackLng: 'en', ns: i18nNamespaces, defaultNS: 'common', resources });
  }
  const settings = await fetchSettings(fetch);
  await fetchNamespaces(settings, fetch);
  const cluster = await fetchCluster(settings, fetch);
  return { settings, cluster, user: {}, uiVersionInfo: { current: settings.version } };
}
