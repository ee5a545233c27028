// The delivery console's texts, in the page's language (<html lang>, chosen by the server from
// ?lang= or Accept-Language). What the gateway says (an error's message, a callback's last error)
// stays as it came: English, for logs.

export const STRINGS = {
  en: {
    title: 'Delivery console',
    signInIntro: 'Sign in with your clinic account of interface B (the values of ehr-gateway clients add). The token stays in this browser tab only.',
    signIn: 'Sign in',
    unknownAccount: 'Unknown clinic account or wrong token.',
    noAnswer: (problem: string) => `The gateway did not answer: ${problem}`,
    signedOut: 'Signed out: the gateway no longer accepts these credentials.',
    signOut: 'Sign out',
    refresh: 'Refresh',
    loadMore: 'Load more',
    show: 'Show ',
    filter: 'filter',
    filters: [
      'all requests',
      'with a failed callback',
      'with a callback pending',
      'received',
      'accepted',
      'waiting for the registry',
      'completed',
      'rejected',
      'failed',
    ],
    noRequests: 'No requests.',
    requestCount: (count: number) => `${count} request${count === 1 ? '' : 's'}, newest first.`,
    loadFailed: (problem: string) => `Could not load the requests: ${problem}`,
    attemptColumns: ['#', 'time', 'HTTP status', 'duration', 'error'],
    noAnswerStatus: 'no answer',
    lastError: (error: string) => `last error: ${error}`,
    noAttemptYet: 'no attempt yet',
    retrying:
      'The last attempt failed: the gateway tries again on its retry schedule (CALLBACK_RETRY_SCHEDULE). Replay appears here once the schedule is exhausted.',
    replay: 'Replay',
    replaying: 'replaying…',
    replayed: 'replayed: waiting for delivery…',
    nothingToReplay: 'nothing to replay any more',
    replayRefused: (problem: string) => `replay refused: ${problem}`,
    callbackFailed: 'callback failed',
    who: (user: string, businessId: string) => `${user} · businessId ${businessId}`,
  },
  ru: {
    title: 'Консоль доставки',
    signInIntro: 'Войдите с учётной записью клиники для интерфейса B (значения из ehr-gateway clients add). Токен остаётся только в этой вкладке браузера.',
    signIn: 'Войти',
    unknownAccount: 'Неизвестная учётная запись клиники или неверный токен.',
    noAnswer: (problem: string) => `Шлюз не ответил: ${problem}`,
    signedOut: 'Вы вышли: шлюз больше не принимает эти учётные данные.',
    signOut: 'Выйти',
    refresh: 'Обновить',
    loadMore: 'Показать ещё',
    show: 'Показать ',
    filter: 'фильтр',
    filters: [
      'все запросы',
      'с неудавшимся обратным вызовом',
      'с ожидающим обратным вызовом',
      'получены',
      'приняты',
      'ожидают ответа реестра',
      'выполнены',
      'отклонены',
      'завершились ошибкой',
    ],
    noRequests: 'Запросов нет.',
    requestCount: (count: number) => `Запросов: ${count}, сначала новые.`,
    loadFailed: (problem: string) => `Не удалось загрузить запросы: ${problem}`,
    attemptColumns: ['№', 'время', 'статус HTTP', 'длительность', 'ошибка'],
    noAnswerStatus: 'нет ответа',
    lastError: (error: string) => `последняя ошибка: ${error}`,
    noAttemptYet: 'попыток ещё не было',
    retrying:
      'Последняя попытка не удалась: шлюз повторит её по своему расписанию (CALLBACK_RETRY_SCHEDULE). Кнопка «Повторить» появится здесь, когда расписание исчерпается.',
    replay: 'Повторить',
    replaying: 'повторяем…',
    replayed: 'повтор запущен: ждём доставки…',
    nothingToReplay: 'повторять больше нечего',
    replayRefused: (problem: string) => `повтор отклонён: ${problem}`,
    callbackFailed: 'обратный вызов не доставлен',
    who: (user: string, businessId: string) => `${user} · businessId ${businessId}`,
  },
};

export type Strings = (typeof STRINGS)['en'];

/** The page's language, as the server wrote it into <html lang>. */
export function pageStrings(): Strings {
  return document.documentElement.lang === 'ru' ? STRINGS.ru : STRINGS.en;
}
