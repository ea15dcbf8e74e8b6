/**
 * supervisord's XML-RPC interface, the one supervisorctl itself speaks, reached with curl on the
 * host's unix socket. A supervisorctl run is a Python start-up (~0.2 s of CPU); curl is ~10 ms, and
 * an upgrade asks supervisord three times per host. Only the handful of calls the service driver
 * makes are encoded here, and only the answer shapes supervisord gives are parsed.
 */
import { ProtocolError } from '../core/errors.ts'

/** supervisord's fault codes that mean "already so" (supervisor/xmlrpc.py `Faults`); others are failures. */
export const SupervisorFault = {
  alreadyStarted: 60,
  notRunning: 70,
} as const

export type RpcParam = string | boolean

/** A fault answer: supervisord refused or failed the call. */
export interface RpcFault {
  code: number
  message: string
}

export type RpcAnswer = { fault: RpcFault } | { fault?: undefined; value: boolean | string | number | Record<string, string | number> }

const escapeXml = (s: string): string => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;')
const unescapeXml = (s: string): string =>
  s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&')

/** The request body of `method(params...)`. */
export function encodeCall(method: string, params: RpcParam[]): string {
  const values = params.map(
    (p) =>
      `<param><value>${typeof p === 'boolean' ? `<boolean>${p ? 1 : 0}</boolean>` : `<string>${escapeXml(p)}</string>`}</value></param>`,
  )
  return `<?xml version="1.0"?><methodCall><methodName>${escapeXml(method)}</methodName><params>${values.join('')}</params></methodCall>`
}

/** `method("a", true)`: how a call is shown in plans and logs. */
export function describeCall(method: string, params: RpcParam[]): string {
  return `${method}(${params.map((p) => JSON.stringify(p)).join(', ')})`
}

function scalar(type: string, text: string): string | number | boolean {
  if (type === 'int' || type === 'i4') return Number(text)
  if (type === 'boolean') return text === '1'
  return unescapeXml(text)
}

const SCALAR = String.raw`<value>(?:<(string|int|i4|boolean)>([^<]*)</(?:string|int|i4|boolean)>|<(string)/>|([^<]*))</value>`

/** Parses supervisord's answer: a fault, a scalar, or a struct of scalars (getProcessInfo). */
export function parseAnswer(xml: string, where: string): RpcAnswer {
  if (!/<methodResponse>/.test(xml))
    throw new ProtocolError(`supervisord at ${where} did not answer with XML-RPC: '${xml.trim().slice(0, 120)}'.`)
  if (/<fault>/.test(xml)) {
    const code = /<name>faultCode<\/name>\s*<value><(?:int|i4)>(-?\d+)<\//.exec(xml)
    const message = /<name>faultString<\/name>\s*<value>(?:<string>)?([^<]*)</.exec(xml)
    return { fault: { code: Number(code?.[1] ?? NaN), message: unescapeXml(message?.[1] ?? '') } }
  }
  if (/<struct>/.test(xml)) {
    const value: Record<string, string | number> = {}
    const member = new RegExp(String.raw`<member>\s*<name>([^<]*)</name>\s*${SCALAR}\s*</member>`, 'g')
    for (let m = member.exec(xml); m; m = member.exec(xml)) {
      const v = m[2] !== undefined ? scalar(m[2], m[3] ?? '') : m[4] !== undefined ? '' : unescapeXml(m[5] ?? '')
      value[unescapeXml(m[1] ?? '')] = typeof v === 'boolean' ? Number(v) : v
    }
    return { value }
  }
  const one = new RegExp(`<param>\\s*${SCALAR}\\s*</param>`).exec(xml)
  if (!one)
    throw new ProtocolError(`supervisord at ${where} answered an XML-RPC value svcops does not read: '${xml.trim().slice(0, 120)}'.`)
  return { value: one[1] !== undefined ? scalar(one[1], one[2] ?? '') : unescapeXml(one[4] ?? '') }
}
