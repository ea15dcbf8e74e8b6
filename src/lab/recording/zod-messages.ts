/**
 * zod's English messages for the recording service's schemas (src/lab/recording/config.ts, api.ts).
 * The service's schemas use zod's tree-shakable form (`zod/mini`), which loads no locale: without
 * this every message would read "Invalid input". Only English is bundled, not every locale.
 */
import * as z from 'zod/mini'
import en from 'zod/v4/locales/en.js'

/** Makes zod's messages the English ones (zod keeps one configuration per process). */
export function useEnglishMessages(): void {
  z.config(en())
}
