/**
 * Whether svcops may talk to the cluster a kubeconfig names. A cluster entry with
 * `insecure-skip-tls-verify: true` accepts any certificate: whoever answers at the server's address
 * — anyone on the network path — reads the bearer token and every answer, and writes what svcops
 * takes for the cluster's state. kubectl honours it silently; svcops refuses it unless the stack
 * opts in explicitly (`svcops:deploy.allowInsecureSkipTlsVerify: true`), and then warns on every
 * run. Called once where the kubeconfig is loaded (src/drivers/kubernetes.ts, `loadKubeConfig`).
 */
import type { KubeConfig } from '@kubernetes/client-node'
import { BadInputError } from '../core/errors.ts'
import { events } from '../core/events.ts'

/** What a cluster target says about trust: the stack's opt-in, carried with its context and kubeconfig. */
export interface KubeconfigTrust {
  context?: string
  kubeconfig?: string
  /** `svcops:deploy.allowInsecureSkipTlsVerify` of the stack. */
  allowInsecureSkipTlsVerify?: boolean
}

// One warning per cluster and process: a run makes a driver per component.
const warned = new Set<string>()

/**
 * Refuses the selected cluster of `kc` when it skips TLS verification and `trust` does not opt in,
 * in one sentence naming the cluster, its server and what is expected; warns when it does opt in.
 */
export function checkKubeconfigTrust(kc: KubeConfig, trust: KubeconfigTrust): void {
  const cluster = kc.getCurrentCluster()
  if (!cluster?.skipTLSVerify) return
  const where = `the kubeconfig ${trust.kubeconfig && !trust.kubeconfig.includes('\n') ? `'${trust.kubeconfig}' ` : ''}(context ${kc.getCurrentContext()})`
  if (!trust.allowInsecureSkipTlsVerify)
    throw new BadInputError(
      `${where}: cluster '${cluster.name}' at ${cluster.server} sets insecure-skip-tls-verify: true, which lets anyone on the way to it pose as the API server; expected a cluster entry with certificate-authority or certificate-authority-data (or svcops:deploy.allowInsecureSkipTlsVerify: true in the stack, to accept the risk).`,
      'Give the cluster entry its CA (kubectl config set-cluster NAME --certificate-authority=ca.crt --embed-certs), or opt in with svcops:deploy.allowInsecureSkipTlsVerify: true.',
    )
  if (warned.has(cluster.server)) return
  warned.add(cluster.server)
  events.warn(
    `TLS verification is off for the Kubernetes API at ${cluster.server} (cluster '${cluster.name}' of ${where} sets insecure-skip-tls-verify): svcops:deploy.allowInsecureSkipTlsVerify accepts it; anyone on the way can pose as the cluster.`,
  )
}
