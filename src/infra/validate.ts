/**
 * Validation of rendered objects against the official Kubernetes object schemas
 * (`kubernetes-models`), since no API server is here to do it.
 */
import { CronJob } from 'kubernetes-models/batch/v1'
import { Deployment } from 'kubernetes-models/apps/v1'
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1'
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1'
import { Role, RoleBinding } from 'kubernetes-models/rbac.authorization.k8s.io/v1'
import { ConfigMap, Namespace, PersistentVolumeClaim, Secret, Service, ServiceAccount } from 'kubernetes-models/v1'
import { BadInputError } from '../core/errors.ts'

interface Model {
  validate(): void
}
type ModelClass = new (data: never) => Model

// Every kind the program creates; a new kind must be added here, or validation refuses it.
const MODELS: Record<string, ModelClass> = {
  'v1/Namespace': Namespace,
  'v1/Secret': Secret,
  'v1/ConfigMap': ConfigMap,
  'v1/Service': Service,
  'v1/ServiceAccount': ServiceAccount,
  'v1/PersistentVolumeClaim': PersistentVolumeClaim,
  'apps/v1/Deployment': Deployment,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'batch/v1/CronJob': CronJob,
  'rbac.authorization.k8s.io/v1/Role': Role,
  'rbac.authorization.k8s.io/v1/RoleBinding': RoleBinding,
}

/** Kinds that have a schema here. */
export function knownKinds(): string[] {
  return Object.keys(MODELS)
}

/** Throws when `object` does not match the official schema of its kind; the message names the object. */
export function validateObject(object: Record<string, unknown>): void {
  const apiVersion = String(object.apiVersion)
  const kind = String(object.kind)
  const metaName = (object.metadata as { name?: unknown } | undefined)?.name
  const name = typeof metaName === 'string' ? metaName : '(unnamed)'
  const Model = MODELS[`${apiVersion}/${kind}`]
  if (!Model) throw new BadInputError(`${kind} ${name}: no schema for ${apiVersion}/${kind}; expected one of ${knownKinds().join(', ')}.`)
  try {
    new Model(object as never).validate()
  } catch (error) {
    throw new BadInputError(`${kind} ${name} does not match the Kubernetes schema: ${(error as Error).message}.`)
  }
}
