import type { GatewayCode } from '../emdr/errors/codes.js';

/**
 * The error codes' meanings in Russian, for the docs pages' error tables, beside the English ones
 * (interface A's in specs/openrpc.json `x-error-codes`, interface B's gateway codes in src/emdr/errors/codes.ts;
 * its classifier codes carry the classifier's Russian). The `message` on the wire stays English: it
 * is for logs. A code without its Russian here fails the docs test (interface A) or the typecheck
 * (interface B).
 */
export const RPC_ERROR_MEANINGS_RU: Readonly<Record<string, string>> = {
  '-32700': 'Тело запроса не является корректным JSON (id null).',
  '-32600':
    'Не запрос и не пакет JSON-RPC 2.0 (пакет больше 100 вызовов, неверный конверт или `cred`); также ответ с id null на тело, отклонённое до чтения (HTTP 415 или 413), с data.reason; и ответ с id null на тело, вложенное глубже 32 уровней или содержащее больше 10 000 членов и элементов (HTTP 200, отклоняется по мере получения).',
  '-32601': 'Такого метода нет, или метод внутреннего канала вызван на публичном порту (и наоборот).',
  '-32602':
    'Параметры не соответствуют схеме метода или содержат значение, которое нельзя сохранить или сравнить (NUL, одиночный суррогат, год 0000): data.errors [{path, message}], указатели JSON ниже params, не больше 20. save_exchange_token без authInfo.phone получает его на /authInfo/phone, если оператор не задал EXCHANGE_TOKEN_PHONE=optional.',
  '-32603': 'Непредвиденный сбой; ничего внутреннего не раскрывается (он записан в журнал).',
  '-32001':
    'Сервис сейчас не может достучаться до своей базы данных: повторите позже (data.reason "service temporarily unavailable; retry later", data.retryAfter в секундах). Никогда не ошибка учётных данных.',
  '-32002':
    'Адрес клиента сделал больше RPC_RATE_LIMIT вызовов за эту минуту (публичный порт): HTTP 429 с Retry-After, id null, data.reason "too many calls from this address; retry later" и data.retryAfter в секундах; ничего из запроса не рассматривалось (тело не прочитано, или пакет отклонён целиком). Повторите через data.retryAfter.',
  '-33000':
    'Внутренний `cred` отсутствует, принадлежит неизвестной внутренней учётной записи или содержит неверный токен (ответ не говорит, какая часть неверна; data.reason "credentials rejected", а data.hint — какой вид должен иметь cred.token, одинаково при любой неверной части), или отклонён после слишком многих неудач ("too many failures, retry later"); токен обмена неизвестен, уже использован или сожжён после 5 неудачных попыток ("exchange token unknown, used or burned"); или `cred` пользователя не называет сохранённой сессии (get_patient, remove_auth_info, remove_authentication; "no stored session for these credentials"). SDK начинает поток с токеном обмена на -33000, -33001 и -33002 и вызывает onAuthNotAuthorized. Методы медицинской карты отвечают им на вызов без `cred` и без `apiKey` ("no credentials: send cred or apiKey") и на неизвестный или отозванный ключ API ("api key rejected").',
  '-33001':
    'Истекла сессия (data.reason "session expired") или токен обмена ("exchange token expired"), или authInfo уже истёк к моменту получения ("authInfo already expired": created + ttl в прошлом). SDK вызывает onAuthExpired.',
  '-33403':
    'Метод медицинской карты запрашивает patientId, отличный от пациента сессии (с `cred`), или вне организаций ключа API (с `apiKey`), существует такой пациент или нет; или `cred` пользователя вызывает метод бэк-офиса (списки по всем пациентам, patient.get_patient_by_id, get_patients, find_patients_by_*, patient.count), которому нужен ключ API (data.reason "access to this patient is forbidden" или "this method takes an api key").',
  '-34001':
    'authenticate: ни один пациент или больше одного не совпадает с patientProperties (или не тот телефон, что проверил сервер авторизации; data.reason "no single patient matches"); считается неудачной попыткой токена обмена. Приложение сообщает об этом пользователю.',
  '-34002':
    'get_patient: сессия действительна, но её пациент больше не активен в источнике пациентов (МИС) (data.reason "patient no longer active in the patient source").',
  '-34003':
    'Токен сессии из authInfo уже сохранён (для save_auth_info: сохранён вообще; для authenticate: сохранён для другого пользователя). Токены уникальны во всей системе, включая истёкшие.',
  '-34004': 'Этот токен обмена уже сохранялся (включая использованные, сожжённые и истёкшие).',
  '-34005':
    'appointment.get_appointment_by_id: нет записи на приём с этим id, которую вызывающему можно видеть (неизвестная или другого пациента: ответ один и тот же, так что id нельзя перебрать).',
  '-34006':
    'diagnostic_report.get_diagnostic_report_by_id: нет результата исследования с этим id, который вызывающему можно видеть (неизвестный или другого пациента).',
  '-34007':
    'save_auth_info: у пользователя ещё нет internalUserId (никогда не был связан с пациентом или связь удалена); клиент должен сначала пройти authenticate с токеном обмена.',
  '-34008': 'prescription.get_prescription_by_id: нет назначения с этим id, которое вызывающему можно видеть (неизвестное или другого пациента).',
  '-34009':
    'authenticate пользователем, уже связанным с пациентом (data.reason "the user is already linked to a patient"): ответ до всякого сопоставления и не считается неудачной попыткой. Новые сессии пользователь получает через save_auth_info, а связь снимает remove_authentication.',
  '-34010':
    'appointment_result.get_appointment_result_by_id: нет результата приёма с этим id, который вызывающему можно видеть (неизвестный или другого пациента).',
};

/** The gateway's own codes in Russian; a classifier code's Russian is the classifier's own wording (src/emdr/errors/classifier-305.ts). */
export const GATEWAY_CODE_MEANINGS_RU: Readonly<Record<GatewayCode, string>> = {
  UNAUTHENTICATED:
    'нет одного из заголовков businessId, user и token, или они не называют действующую учётную запись клиники (HTTP 401). ACCESS_DENIED классификатора — о праве получить документ',
  FORBIDDEN: 'учётная запись клиники не действует от имени этой организации или не регистрировала этот адрес обратного вызова (HTTP 403)',
  NOT_FOUND: 'нет такой операции, запроса или записи реестра этой клиники (HTTP 404)',
  METHOD_NOT_ALLOWED: 'метод не разрешён на этом пути (HTTP 405)',
  NOT_IMPLEMENTED: 'операция не реализована (HTTP 501)',
  REQUEST_TOO_LARGE: 'тело больше предела операции: BODY_LIMIT для RegisterDocument, 64 КиБ для остальных (HTTP 413)',
  UNSUPPORTED_MEDIA_TYPE: 'тело не application/json в UTF-8 или сжато: Content-Encoding не identity (HTTP 415)',
  NOTHING_TO_REPLAY: 'повтор запроса, ни один обратный вызов которого не завершился неудачей (HTTP 409)',
  SERVICE_UNAVAILABLE: 'база данных, а для поиска — реестр, сейчас недоступны; повторите через Retry-After секунд (HTTP 503)',
  XML_NOT_WELL_FORMED:
    'документ не является корректным XML в UTF-8 или вкладывает элементы глубже предела (обратный вызов приёма). XML_VALIDATION_ERROR классификатора — это проверка реестра по Schematron',
  DOCUMENT_CHECK_LIMIT:
    'документ и его подписи не удалось проверить за XML_CHECK_TIMEOUT или в пределах памяти проверки (обратный вызов приёма): неверными они не признаны',
  CERTIFICATE_CHAIN_NOT_CHECKED: 'предупреждение: подписи проверены, но хранилище доверенных сертификатов не настроено, поэтому их цепочки не проверялись',
};
