// `/namespaces/{ns}/workflows/{workflowId}` opens the latest run (as the official app does), so
// links need only the workflow id (README "Inspecting workflows").
import { redirect } from '@sveltejs/kit';
import { fetchWorkflow } from '@temporalio/ui/services/workflow-service';

export async function load({ params }) {
  const { workflow } = await fetchWorkflow({ namespace: params.namespace, workflowId: params.workflow });
  const runId = workflow?.runId;
  if (!runId) throw redirect(302, `/namespaces/${encodeURIComponent(params.namespace)}/workflows`);
  throw redirect(302, `/namespaces/${encodeURIComponent(params.namespace)}/workflows/${encodeURIComponent(params.workflow)}/${runId}/history`);
}
