// `/namespaces/{ns}/workflows/{workflowId}` opens the latest run's history (as the official app
// does), so links need only the workflow id (docs/operations.md "Inspecting workflows").
import { redirect } from '@sveltejs/kit';

export async function load({ params, fetch }) {
  const ns = encodeURIComponent(params.namespace);
  const id = encodeURIComponent(params.workflow);
  const res = await fetch(`/api/v1/namespaces/${ns}/workflows/${id}`);
  const runId = res.ok ? (await res.json())?.workflowExecutionInfo?.execution?.runId : undefined;
  if (!runId) throw redirect(302, `/namespaces/${ns}/workflows`);
  throw redirect(302, `/namespaces/${ns}/workflows/${id}/${encodeURIComponent(runId)}/history`);
}
