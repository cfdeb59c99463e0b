// The namespace's search attributes (OperatorService ListSearchAttributes) for the list filters.
import { fetchSearchAttributesForNamespace } from '@temporalio/ui/services/search-attributes-service';
import { allSearchAttributes } from '@temporalio/ui/stores/search-attributes';

export async function load({ params, parent }) {
  await parent();
  allSearchAttributes.set(await fetchSearchAttributesForNamespace(params.namespace));
}
