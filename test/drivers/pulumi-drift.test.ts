/**
 * Fields changed outside svcops, read from `pulumi preview --refresh --json` (src/drivers/pulumi-drift.ts):
 * the step's detailed diff against the refreshed live object, and who owns each diffed field in its
 * managedFields; or, when the preview's dry-run apply conflicted, the API's conflict message.
 * The whole path (a real `kubectl patch` against the API stand-in, the in-test Pulumi, svcops'
 * preflight) is shown by test/cluster/recording-on-kubernetes.test.ts on the stand-in.
 */
import { describe, expect, it } from 'vitest'
import { OperationError } from '../../src/core/errors.ts'
import { versionOnlyChanges, type PreviewDigest, type PreviewStep } from '../../src/drivers/pulumi.ts'
import { outsideEdits, refuseOutsideEdits, showOutsideEdit } from '../../src/drivers/pulumi-drift.ts'
import { liveComponentChanges } from '../../src/live/kubernetes/live-preview.ts'

const URN = 'urn:pulumi:prod::svcops::svcops:infra:RecordingService$kubernetes:apps/v1:Deployment::svc-recording-deployment'
const NAMES = { deployment: 'svc-recording-deployment', stackMap: 'svc-svcops-stack' }
const OWN = 'pulumi-kubernetes-0a1b2c3d'

/** An update step of the recording Deployment after a refresh: the live object with its managers. */
function step(paths: string[], managedFields: unknown[]): PreviewStep {
  return {
    op: 'update',
    urn: URN,
    detailedDiff: Object.fromEntries(paths.map((p) => [p, { kind: 'update', inputDiff: true }])),
    oldState: {
      id: 'svc-prod/svc-recording',
      outputs: {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'svc-recording', namespace: 'svc-prod', managedFields },
        spec: {
          replicas: 5,
          template: { spec: { containers: [{ name: 'recording-service', image: 'registry.example.internal/svc/recording:1.5.0' }] } },
        },
        __fieldManager: OWN,
      },
    },
  }
}

const PROGRAM = {
  manager: OWN,
  operation: 'Apply',
  fieldsV1: {
    'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"recording-service"}': { '.': {}, 'f:image': {} } } } } },
  },
}

describe('fields changed outside svcops, from the preview', () => {
  it("names the field, the object and the manager of an operator's kubectl edit, which the run would revert", () => {
    const digest: PreviewDigest = {
      steps: [
        { op: 'refresh', urn: URN },
        step(['spec.replicas'], [PROGRAM, { manager: 'kubectl-edit', operation: 'Update', fieldsV1: { 'f:spec': { 'f:replicas': {} } } }]),
      ],
    }
    expect(outsideEdits(digest).map(showOutsideEdit)).toEqual([
      'field spec.replicas of Deployment svc-prod/svc-recording was changed outside svcops (by manager kubectl-edit); the run would revert it',
    ])
  })

  it("finds a list item's field by the item's keys, and says a subresource's manager would stop pulumi up on a conflict", () => {
    const digest: PreviewDigest = {
      steps: [
        step(
          ['spec.replicas', 'spec.template.spec.containers[0].image'],
          [
            { manager: OWN, operation: 'Apply', fieldsV1: { 'f:metadata': { 'f:labels': {} } } },
            { manager: 'kubectl-scale', operation: 'Update', subresource: 'scale', fieldsV1: { 'f:spec': { 'f:replicas': {} } } },
            {
              manager: 'deploy-bot',
              operation: 'Apply',
              fieldsV1: {
                'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"recording-service"}': { 'f:image': {} } } } } },
              },
            },
          ],
        ),
      ],
    }
    expect(outsideEdits(digest).map(showOutsideEdit)).toEqual([
      'field spec.replicas of Deployment svc-prod/svc-recording was changed outside svcops (by manager kubectl-scale through its scale subresource); the run’s pulumi up would stop on a conflict with it',
      'field spec.template.spec.containers[0].image of Deployment svc-prod/svc-recording was changed outside svcops (by manager deploy-bot); the run’s pulumi up would stop on a conflict with it',
    ])
  })

  it("finds nothing when every diffed field is the program's own or the provider's create manager's (a change of the stack file)", () => {
    const digest: PreviewDigest = {
      steps: [
        step(
          ['spec.template.spec.containers[0].image', 'spec.replicas'],
          [PROGRAM, { manager: 'pulumi-kubernetes', operation: 'Update', fieldsV1: { 'f:spec': { 'f:replicas': {} } } }],
        ),
      ],
    }
    expect(outsideEdits(digest)).toEqual([])
  })

  it("reads a failed preview's dry-run conflict when the step carries no managedFields (one field, and several)", () => {
    const digest: PreviewDigest = {
      steps: [{ op: 'update', urn: URN, detailedDiff: { 'spec.replicas': { kind: 'update' } } }],
      diagnostics: [
        {
          severity: 'error',
          urn: URN,
          message:
            'Preview failed: Server-Side Apply field conflict detected. See https://example.invalid for troubleshooting help.\nThe resource managed by field manager "pulumi-kubernetes-0a1b2c3d" had an apply conflict: Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.replicas',
        },
        {
          severity: 'error',
          urn: 'urn:pulumi:prod::svcops::kubernetes:core/v1:ConfigMap::svc-manager-config',
          message:
            'Apply failed with 2 conflicts: conflicts with "config-sync":\n- .data.A\n- .data.B\nconflicts with "kubectl-patch" using v1:\n- .data.C',
        },
      ],
    }
    expect(outsideEdits(digest).map(showOutsideEdit)).toEqual([
      'field spec.replicas of svc-recording-deployment was changed outside svcops (by manager kubectl-edit); the run would revert it',
      'field data.A of svc-manager-config was changed outside svcops (by manager config-sync); the run’s pulumi up would stop on a conflict with it',
      'field data.B of svc-manager-config was changed outside svcops (by manager config-sync); the run’s pulumi up would stop on a conflict with it',
      'field data.C of svc-manager-config was changed outside svcops (by manager kubectl-patch); the run would revert it',
    ])
  })

  it("keeps an edited Deployment out of the recording upgrade's targets, even the replicas the stack holds, and refuses the run with one sentence each", () => {
    const digest: PreviewDigest = {
      steps: [
        step(['spec.replicas'], [PROGRAM, { manager: 'kubectl-edit', operation: 'Update', fieldsV1: { 'f:spec': { 'f:replicas': {} } } }]),
      ],
    }
    const split = versionOnlyChanges(digest, NAMES, { ownReplicas: true })
    expect(split.targets).toEqual([])
    expect(split.other).toEqual([
      expect.stringMatching(/^field spec\.replicas of Deployment svc-prod\/svc-recording was changed outside svcops/),
    ])
    expect(() => refuseOutsideEdits('prod', split.outside)).toThrow(OperationError)
    expect(() => refuseOutsideEdits('prod', split.outside)).toThrow(
      "pulumi preview of stack 'prod': field spec.replicas of Deployment svc-prod/svc-recording was changed outside svcops (by manager kubectl-edit); the run would revert it. Nothing was changed.",
    )
    expect(() => refuseOutsideEdits('prod', [])).not.toThrow()
  })

  it("keeps an edited live component out of the live upgrade's targets, named the same way", () => {
    const ingest = {
      ...step(['spec.template.spec.containers[0].image'], []),
      urn: URN.replace(/RecordingService\$.*$/, 'MediaComponent$kubernetes:apps/v1:Deployment::svc-ingest-deployment'),
    }
    ingest.oldState = {
      id: 'svc-prod/svc-ingest',
      outputs: {
        kind: 'Deployment',
        metadata: {
          managedFields: [
            {
              manager: 'kubectl-set',
              operation: 'Update',
              fieldsV1: { 'f:spec': { 'f:template': { 'f:spec': { 'f:containers': { 'k:{"name":"ingest"}': { 'f:image': {} } } } } } },
            },
          ],
        },
        spec: { template: { spec: { containers: [{ name: 'ingest', image: 'registry.example.internal/svc/ingest:6.0.1' }] } } },
      },
    }
    const split = liveComponentChanges({ steps: [ingest] }, { prefix: 'svc', stackMap: 'svc-svcops-stack' }, { rotation: false })
    expect(split.targets).toEqual([])
    expect(split.other).toEqual([
      'field spec.template.spec.containers[0].image of Deployment svc-prod/svc-ingest was changed outside svcops (by manager kubectl-set); the run would revert it',
    ])
    expect(split.outside).toHaveLength(1)
  })
})
