/** The shape of a run's report, apart from the code that builds and renders it (report.ts, report-html.ts, timeline.ts): the engine's data (src/runs/run-report.ts). */
export type { FailureSummary, HostDowntime, RunReport } from '../runs/run-report.ts'
