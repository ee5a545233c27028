import type { Language } from './language.js';

/**
 * The sequence diagrams of the getting-started page, one source per language: src/docs/flows/<id>.mmd
 * (English) and <id>.ru.mmd, built to dist/docs/flows/<id>.svg and <id>.ru.svg.
 */
export const FLOWS = [
  {
    id: 'interface-a',
    title: { en: 'Interface A: authorization server, patient app and EHR server', ru: 'Интерфейс A: сервер авторизации, приложение пациента и сервер ЭМК' },
  },
  {
    id: 'interface-b',
    title: {
      en: 'Interface B: clinic, gateway and registry, with both callbacks and their retries',
      ru: 'Интерфейс B: клиника, шлюз и реестр, оба обратных вызова и их повторы',
    },
  },
] as const;

/** The file name of a flow's diagram in `language`. */
export function flowFile(id: string, language: Language, extension: 'mmd' | 'svg'): string {
  return language === 'en' ? `${id}.${extension}` : `${id}.${language}.${extension}`;
}
