import { redirect } from '@sveltejs/kit';

export async function load({ parent }) {
  const { settings } = await parent();
  throw redirect(302, `/namespaces/${encodeURIComponent(settings.defaultNamespace)}/workflows`);
}
