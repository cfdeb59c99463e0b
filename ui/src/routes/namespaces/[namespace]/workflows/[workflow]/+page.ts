// `/namespaces/{ns}/workflows/{workflowId}` opens the latest run's history (as the official app
// does), so links need only the workflow id (docs/operations.md "Inspecting workflows"). An id the
// namespace does not know is a 404 page naming it (DescribeWorkflowExecution's NotFound), not a
// silent redirect to the list.
import { error, redirect } from '@sveltejs/kit';

export async function load({ params, fetch }) {
  const ns = encodeURIComponent(params.namespace);
  const id = encodeURIComponent(params.workflow);
  const res = await fetch(`/api/v1/namespaces/${ns}/workflows/${id}`);
  const body = await res.json().catch(() => undefined);
  const runId = res.ok ? body?.workflowExecutionInfo?.execution?.runId : undefined;
  if (!runId) {
    throw error(res.status === 404 ? 404 : 500, res.status === 404 ? `Workflow "${params.workflow}" not found in namespace ${params.namespace}` : (body?.message ?? `DescribeWorkflowExecution answered ${res.status}`));
  }
  throw redirect(302, `/namespaces/${ns}/workflows/${id}/${encodeURIComponent(runId)}/history`);
}
