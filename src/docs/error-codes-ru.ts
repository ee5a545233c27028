import type { ErrorCode } from '../emdr/codes.js';

/**
 * The error codes' meanings in Russian, for the docs pages' error tables, beside the English ones
 * (interface A's in specs/openrpc.json `x-error-codes`, interface B's in src/emdr/codes.ts). The
 * `message` on the wire stays English: it is for logs. A code without its Russian here fails the
 * docs test (interface A) or the typecheck (interface B).
 */
export const RPC_ERROR_MEANINGS_RU: Readonly<Record<string, string>> = {
  '-32700': 'Тело запроса не является корректным JSON (id null).',
  '-32600':
    'Не запрос и не пакет JSON-RPC 2.0 (пакет больше 100 вызовов, неверный конверт или `cred`); также ответ с id null на тело, отклонённое до чтения (HTTP 415 или 413), с data.reason; и ответ с id null на тело, вложенное глубже 32 уровней или содержащее больше 10 000 членов и элементов (HTTP 200, отклоняется по мере получения).',
  '-32601':
    'Такого метода нет, или метод внутреннего канала вызван на публичном порту (и наоборот).',
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
  '-34002': 'get_patient: сессия действительна, но её пациент больше не активен в источнике пациентов (МИС) (data.reason "patient no longer active in the patient source").',
  '-34003':
    'Токен сессии из authInfo уже сохранён (для save_auth_info: сохранён вообще; для authenticate: сохранён для другого пользователя). Токены уникальны во всей системе, включая истёкшие.',
  '-34004': 'Этот токен обмена уже сохранялся (включая использованные, сожжённые и истёкшие).',
  '-34005':
    'appointment.get_appointment_by_id: нет записи на приём с этим id, которую вызывающему можно видеть (неизвестная или другого пациента: ответ один и тот же, так что id нельзя перебрать).',
  '-34006':
    'diagnostic_report.get_diagnostic_report_by_id: нет результата исследования с этим id, который вызывающему можно видеть (неизвестный или другого пациента).',
  '-34007':
    'save_auth_info: у пользователя ещё нет internalUserId (никогда не был связан с пациентом или связь удалена); клиент должен сначала пройти authenticate с токеном обмена.',
  '-34008':
    'prescription.get_prescription_by_id: нет назначения с этим id, которое вызывающему можно видеть (неизвестное или другого пациента).',
  '-34009':
    'authenticate пользователем, уже связанным с пациентом (data.reason "the user is already linked to a patient"): ответ до всякого сопоставления и не считается неудачной попыткой. Новые сессии пользователь получает через save_auth_info, а связь снимает remove_authentication.',
  '-34010':
    'appointment_result.get_appointment_result_by_id: нет результата приёма с этим id, который вызывающему можно видеть (неизвестный или другого пациента).',
};

export const REGISTRY_ERROR_MEANINGS_RU: Readonly<Record<ErrorCode, string>> = {
  ACCESS_DENIED: 'нет прав (неизвестная учётная запись клиники, неверный токен или организация, от имени которой учётная запись не действует)',
  CANT_BUILD_CERT_CHAIN_TO_ACCREDITED_CA_CERT: 'нет цепочки от сертификата подписанта до доверенного сертификата (SIGNATURE_TRUST_STORE)',
  CANT_REG_VERSION: 'регистрация версии документа невозможна (заменяемая версия не текущая)',
  INTERNAL_ERROR: 'внутренняя ошибка',
  MIS_NOT_AVAILABLE: 'предоставляющая система (архив МИС) недоступна',
  DIGEST_MISMATCH: 'хеш файла, полученного реестром от предоставляющей системы, не совпадает с зарегистрированным',
  FILE_WAS_NOT_SENT: 'предоставляющая система не передала файл документа (getDocumentFile: шлюз его больше не хранит)',
  GET_DOCUMENT_FILE_ERROR: 'не удалось получить файл документа от предоставляющей системы',
  ASYNC_RESPONSE_TIMEOUT: 'асинхронный ответ реестра не пришёл за REGISTRY_DEADLINE: шлюз перестал ждать (реестр мог всё же зарегистрировать документ: это покажет SearchRegistryItem по localUid)',
  NO_END_ENTITY_CERTIFICATE: 'сертификата подписанта нет в подписи',
  NO_SIGNATURE: 'у документа нет подписи (CMS без подписантов)',
  NOT_UNIQUE_PROVIDED_ID: 'документ с этим локальным идентификатором (localUid) уже был отправлен',
  REGISTRY_ITEM_NOT_FOUND: 'запрошенная запись реестра не найдена',
  RUNTIME_ERROR: 'непредвиденная ошибка реестра',
  SIGNATURE_DECODING_ERROR: 'подпись не декодируется (не base64, не CMS SignedData)',
  SIGNATURE_VERIFICATION_ERROR: 'подпись не проверяется: сделана над другими байтами, неверное значение подписи или сертификат не действовал в момент подписания',
  UNKNOWN_ALGORITHM: 'алгоритм хеширования, подписи или ключа, который шлюз не поддерживает',
  WRONG_CREATION_DATE: 'дата создания документа позже даты его регистрации',
  VALIDATION_ERROR: 'значение не прошло проверку (схема запроса, base64, контрольное число СНИЛС)',
  WRONG_SIGNATURE_FORMAT: 'неподдерживаемый формат подписи (не отсоединённая CMS)',
  RATE_LIMIT: 'достигнут защитный предел, повторите через минуту или позже',
  XML_VALIDATION_ERROR: 'документ не является корректным XML',
  NOT_FOUND: 'шлюз: нет такой операции или запроса',
  METHOD_NOT_ALLOWED: 'шлюз: метод не разрешён на этом пути',
  NOT_IMPLEMENTED: 'шлюз: операция не реализована',
  REQUEST_TOO_LARGE: 'шлюз: тело больше предела операции (BODY_LIMIT для RegisterDocument, 64 КиБ для остальных)',
  UNSUPPORTED_MEDIA_TYPE: 'шлюз: тело не application/json в UTF-8 или сжато (Content-Encoding не identity)',
  NOTHING_TO_REPLAY: 'шлюз: повтор запроса, ни один обратный вызов которого не завершился неудачей',
  SERVICE_UNAVAILABLE: 'шлюз: база данных сейчас недоступна; повторите через Retry-After секунд',
  CERTIFICATE_CHAIN_NOT_CHECKED: 'предупреждение шлюза: подписи проверены, но хранилище доверенных сертификатов не настроено, поэтому их цепочки не проверялись',
};
