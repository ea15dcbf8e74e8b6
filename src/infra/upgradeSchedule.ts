/**
 * A scheduled upgrade of the recording service: a CronJob that runs svcops itself,
 * `svcops upgrade recording --env <stack> --to <version> --yes --json`, in the maintenance window
 * from config. The stack file it reads is mounted from a ConfigMap (references only, no secret
 * values); the credentials those references name come from an existing Secret.
 */
import * as k8s from '@pulumi/kubernetes'
import * as pulumi from '@pulumi/pulumi'
import { containerSecurity, labelsOf, podSecurity, pullSecretsOf, selectorOf, TMP_MOUNT, TMP_VOLUME, type AppIdentity } from './kube.ts'
import { createNetworkPolicy } from './networkPolicy.ts'

/** Where the stack file and the credentials are mounted in the job's container. */
export const STACKS_DIR = '/etc/svcops/stacks'
export const CREDENTIALS_DIR = '/etc/svcops/credentials'

/** The command the CronJob runs. */
export function upgradeCommand(stack: string, to: string): string[] {
  return ['svcops', 'upgrade', 'recording', '--env', stack, '--to', to, '--yes', '--json']
}

export interface UpgradeScheduleArgs {
  /** Namespace of the CronJob and its ConfigMap. */
  namespace: pulumi.Input<string>
  /** Stack (environment) name passed to `--env`. */
  stack: string
  /** Stack file content for svcops (YAML, `config:` with svcops:* keys, no secure values). */
  stackFile: string
  /** Release of the recording service to upgrade to. */
  to: string
  /** Cron expression of the maintenance window and its time zone. */
  schedule: string
  /** IANA time zone of the schedule. */
  timeZone: string
  /** Image of svcops, with its tag. */
  image: string
  /** Existing Secret with the credentials the stack file references. */
  credentialsSecret: string
  /** Secret for pulling from a private registry. */
  imagePullSecret?: string
}

export class UpgradeSchedule extends pulumi.ComponentResource {
  readonly cronJobName: pulumi.Output<string>

  constructor(name: string, args: UpgradeScheduleArgs, opts?: pulumi.ComponentResourceOptions) {
    super('svcops:infra:UpgradeSchedule', name, {}, opts)
    const tag = args.image.slice(args.image.lastIndexOf(':') + 1)
    const identity: AppIdentity = { name: 'svcops-upgrade', instance: name, component: 'maintenance', version: tag }
    const labels = labelsOf(identity)
    const stackMap = new k8s.core.v1.ConfigMap(
      `${name}-stack`,
      { metadata: { name: `${name}-stack`, namespace: args.namespace, labels }, data: { [`Pulumi.${args.stack}.yaml`]: args.stackFile } },
      { parent: this },
    )
    const job = new k8s.batch.v1.CronJob(
      `${name}-cronjob`,
      {
        metadata: { name, namespace: args.namespace, labels },
        spec: {
          schedule: args.schedule,
          timeZone: args.timeZone,
          // Two upgrades at once would fight over the lock; a missed window is skipped, not caught up late.
          concurrencyPolicy: 'Forbid',
          startingDeadlineSeconds: 3600,
          successfulJobsHistoryLimit: 3,
          failedJobsHistoryLimit: 5,
          jobTemplate: {
            metadata: { labels },
            spec: {
              // svcops rolls back by itself; retrying a failed upgrade blindly is not safe.
              backoffLimit: 0,
              template: {
                metadata: { labels: { ...labels, ...selectorOf(identity) } },
                spec: {
                  restartPolicy: 'Never',
                  automountServiceAccountToken: false,
                  securityContext: podSecurity(),
                  ...pullSecretsOf(args.imagePullSecret),
                  containers: [
                    {
                      name: 'upgrade',
                      image: args.image,
                      command: upgradeCommand(args.stack, args.to),
                      env: [{ name: 'SVCOPS_STACKS_DIR', value: STACKS_DIR }],
                      envFrom: [{ secretRef: { name: args.credentialsSecret } }],
                      securityContext: containerSecurity(),
                      resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '512Mi' } },
                      volumeMounts: [
                        TMP_MOUNT,
                        { name: 'stack', mountPath: STACKS_DIR, readOnly: true },
                        { name: 'credentials', mountPath: CREDENTIALS_DIR, readOnly: true },
                      ],
                    },
                  ],
                  volumes: [
                    TMP_VOLUME,
                    { name: 'stack', configMap: { name: stackMap.metadata.name } },
                    { name: 'credentials', secret: { secretName: args.credentialsSecret, defaultMode: 0o400 } },
                  ],
                },
              },
            },
          },
        },
      },
      { parent: this },
    )
    // svcops reaches the recording service, its database, the manager and the Kubernetes API:
    // outgoing connections are open, nothing connects to the job.
    createNetworkPolicy(`${name}-network-policy`, { identity, namespace: args.namespace, ingress: [], egress: [{}] }, this)
    this.cronJobName = job.metadata.name
    this.registerOutputs({ cronJobName: this.cronJobName })
  }
}
